"""Models: the catalog (embedded and added GGUF files, served models), a model's details, how
it is loaded, load/unload, adding, testing and removing a served model, and a test prompt
that shows the generation speed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine.models.checks import problems
from engine.models.load import MAX_SLOTS
from gui.models import set_setting
from gui.widgets.common import (
    AppContext,
    Card,
    Header,
    SendRow,
    button,
    esc,
    muted,
    page_column,
    plain_list,
    primary,
    show_error,
    spin_box,
    text_view,
)


def ask_server(parent: QWidget) -> dict[str, str | None] | None:
    """The address, name, model id and API-key variable of a served model, from a dialog."""
    dialog = QDialog(parent)
    dialog.setWindowTitle("Add a served model")
    form = QFormLayout(dialog)
    fields = {
        "url": QLineEdit("http://localhost:8000/v1"),
        "name": QLineEdit(),
        "api_model": QLineEdit(),
        "api_key_env": QLineEdit(),
    }
    fields["api_model"].setPlaceholderText("the server's only model")
    fields["api_key_env"].setPlaceholderText("none (a variable's name, never the key)")
    labels = ("Address", "Name", "Model id", "API key variable")
    for label, field in zip(labels, fields.values(), strict=True):
        form.addRow(label, field)
    buttons = QDialogButtonBox(
        QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
    )
    buttons.accepted.connect(dialog.accept)
    buttons.rejected.connect(dialog.reject)
    form.addRow(buttons)
    if dialog.exec() != QDialog.DialogCode.Accepted:
        return None
    return {k: (f.text().strip() or None) for k, f in fields.items()}


def _where(info: dict[str, Any]) -> str:
    """Where a loaded model's layers went, as its model process said (a served model: "")."""
    if not info.get("gpu_layers"):
        return info.get("gpu_note", "")
    used = info.get("gpu_memory", 0) / 2**20
    return f"{info['gpu_layers']}/{info['layers']} layers on {info['device']} ({used:.0f} MiB)"


class ModelsScreen(QWidget):
    def __init__(self, ctx: AppContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.stream_job: Any = None
        header = Header(
            "Models",
            "Local GGUF models run on this computer; nothing is downloaded. A served model runs "
            "on the server whose address you give, and only there.",
        )
        outer = page_column(self, header, spacing=14)
        body = QHBoxLayout()
        body.setSpacing(16)
        outer.addLayout(body, 1)

        body.addWidget(self._catalog_card())

        right = QVBoxLayout()
        right.setSpacing(16)
        body.addLayout(right, 1)

        # -- details and settings --------------------------------------------------------
        top = QHBoxLayout()
        top.setSpacing(16)
        self.info_card = Card("Details")
        self.info = QLabel("Reading the model catalog…")
        self.info.setTextFormat(Qt.TextFormat.RichText)
        self.info.setWordWrap(True)
        self.info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.info.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.info_card.add(self.info, 1)
        top.addWidget(self.info_card, 3)

        top.addWidget(self._settings_card(), 2)
        right.addLayout(top)

        right.addWidget(self._try_card(), 1)

        ctx.models_changed.append(self.reload)
        ctx.host.changed.connect(self._host_changed)
        ctx.jobs.start(self._gpu_support, on_done=self._gpu_known)
        self.reload()
        self._host_changed()

    def _try_card(self) -> Card:
        """A test prompt, its streamed reply and the generation speed."""
        tc = Card("Try it")
        self.prompt = QLineEdit("In one sentence, what does paracetamol treat?")
        row = SendRow(self.prompt, "Generate", self.test_prompt, self._stop)
        self.run_button, self.stop_button = row.send, row.stop
        self.stop_button.setEnabled(False)
        tc.add_layout(row)
        self.output = text_view(120)
        self.output.setPlaceholderText("The model's reply appears here as it is written.")
        tc.add(self.output, 1)
        self.speed = muted(QLabel(""))
        tc.add(self.speed)
        return tc

    def _settings_card(self) -> Card:
        """How the model runs (context, threads, GPU layers, slots) and the load buttons."""
        sc = Card("How it runs")
        grid = QGridLayout()
        grid.setHorizontalSpacing(12)
        grid.setVerticalSpacing(8)
        settings = self.ctx.host.load_settings()
        self.n_ctx = spin_box(512, 131072, settings.context, suffix=" tokens")
        self.n_ctx.setSingleStep(1024)
        self.threads = spin_box(0, 256, settings.threads or 0, special="Automatic")
        layers = settings.gpu_layers
        self.gpu = spin_box(
            -2,
            999,
            -2 if layers is None else layers,
            special="Automatic",
            tip="-1 offloads every layer; 0 keeps the model on the CPU",
        )
        self.gpu_note = muted(QLabel("Checking for GPU support…"))
        self.gpu_note.setWordWrap(True)
        self.slots = spin_box(
            0,
            MAX_SLOTS,
            settings.slots or 0,
            special="Automatic",
            tip="Sequences the model decodes at once, each with the whole context: runs keep "
            "that many items in flight. Automatic: as many as the free memory holds (each "
            "takes its KV cache), at most 8 on a CPU and 16 on a GPU",
        )
        self.slots_note = muted(QLabel(""))
        self.slots_note.setWordWrap(True)
        grid.addWidget(QLabel("Context"), 0, 0)
        grid.addWidget(self.n_ctx, 0, 1)
        grid.addWidget(QLabel("CPU threads"), 1, 0)
        grid.addWidget(self.threads, 1, 1)
        grid.addWidget(QLabel("GPU layers"), 2, 0)
        grid.addWidget(self.gpu, 2, 1)
        grid.addWidget(QLabel("Slots"), 3, 0)
        grid.addWidget(self.slots, 3, 1)
        grid.addWidget(self.slots_note, 4, 0, 1, 2)
        grid.addWidget(self.gpu_note, 5, 0, 1, 2)
        sc.add_layout(grid)
        for w in (self.n_ctx, self.threads, self.gpu, self.slots):
            w.valueChanged.connect(self._save_settings)
        buttons = QHBoxLayout()
        self.load_button = primary(button("Load", self.load))
        self.unload_button = button("Unload", self.unload)
        buttons.addWidget(self.load_button)
        buttons.addWidget(self.unload_button)
        buttons.addStretch(1)
        sc.add_layout(buttons)
        self.state = muted(QLabel(""))
        self.state.setWordWrap(True)
        sc.add(self.state)
        sc.layout_.addStretch(1)
        return sc

    # -- the catalog ---------------------------------------------------------------------

    def _catalog_card(self) -> Card:
        """The list of usable models, its buttons, and the model files that cannot be used."""
        left = Card("Available models")
        self.list = plain_list(lambda *_: self._show_info())
        left.add(self.list, 1)
        self.problems = QLabel("")
        self.problems.setObjectName("problems")
        self.problems.setWordWrap(True)
        self.problems.setTextFormat(Qt.TextFormat.RichText)
        self.problems.setVisible(False)
        left.add(self.problems)
        row = QHBoxLayout()
        self.add_button = button("Add .gguf file…", self.add_file)
        self.remove_button = button(
            "Remove", self.remove_model, "Forget an added model (the file is not deleted)"
        )
        self.server_button = button(
            "Add server…",
            self.add_server_dialog,
            "A model served over the OpenAI API (vLLM, llama-server…)",
        )
        self.check_button = button("Test server", self.check_server)
        row.addWidget(self.add_button)
        row.addWidget(self.server_button)
        left.add_layout(row)
        row2 = QHBoxLayout()
        row2.addWidget(self.check_button)
        row2.addWidget(self.remove_button)
        left.add_layout(row2)
        left.setMinimumWidth(300)
        left.setMaximumWidth(380)
        return left

    def reload(self) -> None:
        models = self.ctx.model_list
        current = self.current.name if self.current is not None else self.ctx.host.selected
        self.list.clear()
        if models is None:
            return
        for m in models:
            origin = {"embedded": "built in", "added": "added", "folder": "models folder"}.get(
                m.origin, m.origin
            )
            line = f"{m.summary()} · {origin}"
            item = QListWidgetItem()
            item.setData(Qt.ItemDataRole.UserRole + 1, line)
            item.setData(Qt.ItemDataRole.UserRole, m)
            self.list.addItem(item)
            if m.name == current:
                self.list.setCurrentItem(item)
        if self.list.currentItem() is None and self.list.count():
            self.list.setCurrentRow(0)
        self._label_items()
        self._show_info()
        self._show_problems()

    def _show_problems(self) -> None:
        """The model files found that cannot be used, each with its reason."""
        found = problems()
        lines = [
            f"<b>{esc(Path(p.path).name)}</b>: {esc(p.reason)}"
            + ("" if p.origin == "folder" else f" (added as {esc(p.name)})")
            for p in found
        ]
        head = "Cannot be used:" if len(found) == 1 else f"{len(found)} files cannot be used:"
        self.problems.setText(f"<span style='color:#b91c1c'>{head}</span><br>" + "<br>".join(lines))
        self.problems.setToolTip("\n".join(p.path for p in found))
        self.problems.setVisible(bool(found))

    def _label_items(self) -> None:
        """Item texts, marking the loaded model."""
        host = self.ctx.host
        for i in range(self.list.count()):
            item = self.list.item(i)
            m = item.data(Qt.ItemDataRole.UserRole)
            loaded = host.model is not None and host.name == m.name and host.state == "ready"
            mark = "  ● loaded" if loaded else ""
            item.setText(f"{m.name}{mark}\n{item.data(Qt.ItemDataRole.UserRole + 1)}")
            line = self.list.fontMetrics().lineSpacing()
            item.setSizeHint(QSize(0, 2 * line + 20))

    @property
    def current(self) -> Any:
        item = self.list.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item is not None else None

    def _show_info(self) -> None:
        m = self.current
        if m is None:
            self.info.setText("No model selected.")
            return
        cells = "".join(
            f"<tr><td style='color:#6b7280; padding:2px 14px 2px 0'>{esc(k)}</td>"
            f"<td style='padding:2px 0'>{esc(v)}</td></tr>"
            for k, v in m.rows()
        )
        self.info.setText(f"<table>{cells}</table>")
        self.info.setToolTip(m.location)
        self.remove_button.setEnabled(m.removable)
        self.check_button.setEnabled(m.remote)
        self._host_changed()
        self._plan_slots()

    def add_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Add a GGUF model", "", "GGUF models (*.gguf);;All files (*)"
        )
        if path:
            self.add_path(path)

    def add_path(self, path: str, name: str | None = None) -> None:
        """Check ``path`` and add it to the catalog (in the background)."""
        from engine.models import catalog

        def done(info: Any) -> None:
            self.ctx.status(f"Added {info.name}.")
            self.ctx.host.select(info.name)
            self.ctx.refresh_models()

        self.ctx.jobs.start(
            lambda job: catalog.add_model(path, name),
            on_done=done,
            on_error=lambda e: show_error(self, e, self.ctx, "This file cannot be added"),
        )

    def add_server_dialog(self) -> None:
        answers = ask_server(self)
        if answers is not None:
            self.add_server(**answers)

    def add_server(
        self,
        url: str | None,
        name: str | None,
        api_model: str | None = None,
        api_key_env: str | None = None,
    ) -> None:
        """Add the model served at ``url`` once its server answers (in the background)."""
        from engine.models import catalog

        def done(info: Any) -> None:
            self.ctx.status(f"Added {info.name}, served at {info.location}.")
            self.ctx.host.select(info.name)
            self.ctx.refresh_models()

        self.ctx.jobs.start(
            lambda job: catalog.add_served(url or "", name or "", api_model, api_key_env),
            on_done=done,
            on_error=lambda e: show_error(self, e, self.ctx, "This server cannot be added"),
        )

    def check_server(self) -> None:
        """Ask the selected served model's server whether it answers (in the background)."""
        m = self.current
        if m is None or not m.remote:
            return

        def done(status: dict[str, Any]) -> None:
            if status["answers"]:
                self.state.setText(f"{m.name}: the server answers ({m.api_model}).")
            else:
                self.state.setText(f"{m.name}: the server does not answer: {status['error']}")

        self.state.setText(f"Asking {m.location}…")
        self.ctx.jobs.start(lambda job: m.check(), on_done=done)

    def remove_model(self) -> None:
        from engine.models import catalog

        m = self.current
        if m is None or not m.removable:
            return
        try:
            catalog.remove_model(m.name)
        except Exception as exc:  # noqa: BLE001
            show_error(self, exc, self.ctx)
            return
        self.ctx.refresh_models()

    # -- loading -------------------------------------------------------------------------

    def _save_settings(self) -> None:
        set_setting("model/n_ctx", self.n_ctx.value())
        set_setting("model/n_threads", self.threads.value())
        set_setting("model/n_gpu_layers", self.gpu.value())
        set_setting("model/slots", self.slots.value())
        self._plan_slots()

    def _plan_slots(self) -> None:
        """Say how many slots the selected model gets with these settings, and why (in the
        background: its header and the free memory are read)."""
        m = self.current
        if m is None:
            return
        load = self.ctx.host.load_settings()
        self.ctx.jobs.start(
            lambda job: m.slots(load),
            on_done=lambda found: self._slots_known(m.name, found),
            on_error=lambda e: self.slots_note.setText(str(e)),
        )

    def _slots_known(self, name: str, found: dict[str, Any]) -> None:
        if self.current is None or self.current.name != name:
            return  # another model was chosen meanwhile
        note = found.get("slots_note", "")
        self.slots_note.setText(note[:1].upper() + note[1:] + "." if note else "")
        self.slots.setEnabled(bool(found))  # a served model: its server decides

    @staticmethod
    def _gpu_support(job: Any) -> tuple[list[str], str, int]:
        from engine.models import gpu
        from engine.models.hardware import physical_cores

        found = gpu.devices()
        note = "" if found else gpu.no_device_note()
        return [d.label() for d in found], note, physical_cores()

    def _gpu_known(self, result: tuple[list[str], str, int]) -> None:
        found, note, cores = result
        self.threads.setToolTip(
            f"Automatic uses the {cores} physical cores; models working at the same time "
            "share them, so they never oversubscribe the CPU"
        )
        self.threads.setSpecialValueText(f"Automatic ({cores})")
        if found:
            self.gpu_note.setText(
                f"This build offloads to {' + '.join(found)}: Automatic puts there the layers "
                "that fit its free memory."
            )
        else:
            self.gpu_note.setText(note[:1].upper() + note[1:] + ".")
            self.gpu.setEnabled(False)

    def load(self) -> None:
        m = self.current
        if m is None:
            return
        self._save_settings()
        self.ctx.host.select(m.name)
        host = self.ctx.host
        if host.model is not None and host.name == m.name:
            host.unload()  # reload with the new settings
        self.ctx.jobs.start(
            lambda job: host.get(m.name),
            on_done=lambda model: self._loaded(m.name),
            on_error=lambda e: show_error(self, e, self.ctx, "The model could not be loaded"),
        )

    def _loaded(self, name: str) -> None:
        self.ctx.status(f"{name} is loaded.")
        self._host_changed()  # a model the pool held already sends no event of its own

    def unload(self) -> None:
        self.ctx.host.unload()

    def _host_changed(self) -> None:
        self._label_items()
        host = self.ctx.host
        m = self.current
        here = m is not None and host.name == m.name
        if here and host.state == "ready":
            info = host.model.info if host.model is not None else {}
            pooled = {p["name"]: p for p in host.pool.status()}.get(m.name, {})
            threads = pooled.get("threads") or info.get("n_threads", "?")
            shared = " (its share while other models work)" if pooled.get("working") else ""
            slots = f", {info['slots']} slots" if info.get("slots") else ""
            where = _where(info)
            self.state.setText(
                f"Loaded: context {info.get('n_ctx', '?')}{slots}, {threads} CPU threads{shared}"
                + (f"; {where}." if where else ".")
            )
        elif here and host.state == "loading":
            self.state.setText("Loading…")
        elif here and host.state == "crashed":
            self.state.setText("The model process stopped. Load it again to restart it.")
        elif host.model is not None and host.name:
            self.state.setText(f"{host.name} is in use; this one loads beside it when needed.")
        else:
            self.state.setText("Not loaded. It loads by itself when first needed.")
        self.unload_button.setEnabled(host.model is not None)
        self.load_button.setText("Reload" if here and host.state == "ready" else "Load")

    # -- test prompt ---------------------------------------------------------------------

    def test_prompt(self) -> None:
        m = self.current
        prompt = self.prompt.text().strip()
        if m is None or not prompt or self.stream_job is not None:
            return
        host = self.ctx.host
        self.ctx.host.select(m.name)

        def job(job: Any) -> Any:
            model = host.get(m.name)
            if model.capabilities.chats:
                stream = model.stream_chat([{"role": "user", "content": prompt}], max_tokens=160)
            else:
                stream = model.stream_complete(prompt, max_tokens=96)
            for piece in stream:
                job.piece(piece)
                if job.cancelled:
                    stream.cancel()
            return stream.result

        self.output.clear()
        self.speed.setText("Generating…")
        self.run_button.setEnabled(False)
        self.stop_button.setEnabled(True)
        self.stream_job = self.ctx.jobs.start(
            job,
            on_piece=self._piece,
            on_done=self._generated,
            on_error=lambda e: show_error(self, e, self.ctx, "Generation failed"),
            on_ended=self._ended,
        )

    def _piece(self, text: str) -> None:
        from PySide6.QtGui import QTextCursor

        cursor = self.output.textCursor()
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(text)
        self.output.setTextCursor(cursor)

    def _generated(self, g: Any) -> None:
        if g is None:
            return
        self.ctx.host.last_speed = g.tokens_per_second
        self.speed.setText(
            f"{g.completion_tokens} tokens in {g.seconds:.2f} s · "
            f"{g.tokens_per_second:.1f} tokens/s · prompt {g.prompt_tokens} tokens"
            + (" · stopped" if g.finish_reason == "cancelled" else "")
        )

    def _stop(self) -> None:
        if self.stream_job is not None:
            self.stream_job.stop()
            model = self.ctx.host.model
            if model is not None:
                model.cancel()

    def _ended(self) -> None:
        self.stream_job = None
        self.run_button.setEnabled(True)
        self.stop_button.setEnabled(False)
        if self.speed.text() == "Generating…":
            self.speed.setText("")
