"""Golden dialogues: the consultations a doctor model is fine-tuned on, built as the
consultation paper built them (its §4.2): in each turn the doctor asks about one key of the
case's medical information and the patient model answers it; the doctor ends with the
case's diagnosis.

A golden set is a consultation run of the ``oracle-direct`` doctor (every key asked, in the
case's order) with the chosen patient model, tagged with the set's name: it is stored,
resumed, shown and exported like any run (``medexam consult show``, ``consult
export-dialogues``). :func:`doctor_dialogues` reads a set (or a JSON Lines file of chat
dialogues) as the doctor's training conversations: the doctor's own system prompt, the
opening request, the questions and answers, and a closing turn naming the diagnosis.

>>> build_golden(store, "agentclinic-train", "golden-train", patient="smollm2")  # doctest: +SKIP
>>> len(doctor_dialogues(store, "golden-train"))                                 # doctest: +SKIP
77
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import UserError
from engine.text import jsonio

if TYPE_CHECKING:
    from engine.consult.settings import ConsultSettings
    from engine.store import Store
    from engine.types import JSONDict

#: The doctor of a golden set: every key of the case, in its order.
GOLDEN_DOCTOR = "oracle-direct"
#: The run setting that names the golden set a run belongs to.
TAG = "golden"


class GoldenError(UserError, ValueError):
    """No golden set (or dialogue file) of that name, or one that holds no dialogue."""


def golden_sets(store: Store) -> dict[str, list[int]]:
    """Every golden set by name, with its runs, oldest first."""
    out: dict[str, list[int]] = {}
    for r in sorted(store.runs("consult"), key=lambda r: r["id"]):
        tag = (r.get("settings") or {}).get(TAG)
        if tag:
            out.setdefault(str(tag), []).append(int(r["id"]))
    return out


def golden_settings(
    store: Store,
    name: str,
    *,
    patient: str | None = None,
    limit: int | None = None,
    patient_mode: str = "paper",
    replace: bool = False,
) -> tuple[ConsultSettings, JSONDict, list[int]]:
    """The run that builds golden set ``name``: its settings (the ``oracle-direct`` doctor,
    ``patient`` — the default chat model when None — answering every key), its tags, and
    the runs of an older set of that name it replaces. A name in use is refused unless
    ``replace``."""
    from engine.consult.settings import ConsultSettings
    from engine.train.artefacts import check_name

    check_name(name)
    old = golden_sets(store).get(name, [])
    if old and not replace:
        raise GoldenError(
            f"golden set {name!r} exists (run {old[-1]}); give --replace or another name"
        )
    settings = ConsultSettings(
        doctor=GOLDEN_DOCTOR, patient=patient, limit=limit, patient_mode=patient_mode
    )
    return settings, {TAG: name}, old


def forget_runs(store: Store, runs: list[int], summary: JSONDict) -> None:
    """Delete the replaced set's ``runs`` once the new set's run (``summary``) finished."""
    if summary.get("status") == "finished":
        for run_id in runs:
            store.delete_run(run_id)


def build_golden(
    store: Store,
    cases: str,
    name: str,
    *,
    patient: str | None = None,
    limit: int | None = None,
    patient_mode: str = "paper",
    replace: bool = False,
    **loop: Any,
) -> JSONDict:
    """Build golden set ``name`` from the cases of data set ``cases`` (see
    :func:`golden_settings`); return the run's summary. ``loop`` holds
    :func:`engine.runs.run`'s keywords (``progress``, ``cancel``, ``on_start``…; a stopped
    set goes on with ``resume=RUN``, as any run)."""
    from engine.consult.run import run_consult

    settings, tags, old = golden_settings(
        store, name, patient=patient, limit=limit, patient_mode=patient_mode, replace=replace
    )
    summary = run_consult(store, cases, settings=settings, tags=tags, **loop)
    forget_runs(store, old, summary)
    return summary


def _from_file(path: Path) -> list[list[dict[str, str]]]:
    """Chat dialogues from a JSON Lines file (``{"messages": [{"role", "content"}…]}`` per
    line, as ``consult export-dialogues`` writes them), read by the one JSON reader (a file
    that is not UTF-8, not JSON or nested too deeply is refused in one line)."""
    out = []
    for number, _, record in jsonio.numbered_records(path, jsonl=True, objects=False):
        try:
            messages = record["messages"]  # type: ignore[index,call-overload]
            ok = all(m["role"] in ("system", "user", "assistant") and isinstance(
                m["content"], str) for m in messages)  # fmt: skip
        except (ValueError, KeyError, TypeError):
            ok = False
        if not ok or not any(m["role"] == "assistant" for m in messages):
            raise GoldenError(
                f"{path.name} line {number}: not a chat dialogue "
                '({"messages": [{"role": …, "content": …}, …]} with a doctor turn)'
            )
        out.append([{"role": m["role"], "content": m["content"]} for m in messages])
    return out


def doctor_dialogues(store: Store, source: str) -> list[list[dict[str, str]]]:
    """The training conversations of ``source``: a golden set's name (each consultation as
    the doctor sees it, :func:`engine.consult.report.dialogue_records` with
    ``for_doctor``), or a JSON Lines file of chat dialogues."""
    from engine.consult.report import dialogue_records

    sets = golden_sets(store)
    if source in sets:
        out = []
        for run_id in sets[source]:
            out += [d["messages"] for d in dialogue_records(store, run_id, for_doctor=True)]
        if not out:
            raise GoldenError(f"golden set {source!r} holds no finished consultation yet")
        return out
    path = Path(source).expanduser()
    if path.is_file():
        found = _from_file(path)
        if not found:
            raise GoldenError(f"{path.name} holds no dialogue")
        return found
    known = ", ".join(sets) or "none yet"
    raise GoldenError(
        f"no golden set or dialogue file {source!r} (golden sets: {known}; build one with "
        "'medexam consult golden')"
    )
