"""A run's short label: the settings that tell it apart from the other runs of its activity.

The CLI (``runs list``, ``report``), the desktop app's Results table and the exports all
name runs with :func:`run_label`, so one run reads the same everywhere.

>>> run_label({"activity": "exam", "runner": "model", "model": "smollm2",
...            "settings": {"method": "logprob", "shots": 4, "lang": "zh", "instruction": True}})
'logprob · 4-shot · zh · instr'
>>> run_label({"activity": "french", "runner": "model", "model": "smollm2",
...            "settings": {"index": "cours-hybrid", "retriever": "hybrid", "k": 1,
...                         "corpus": "cours"}})
'hybrid k=1 · cours'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.types import JSONDict, Row

SEP = " · "
#: Exam settings named in a label only when they differ from their defaults.
_EXAM_EXTRAS = ("template", "seed", "temperature", "max_tokens", "shots_from")
_CONSULT_ROLES = ("doctor", "patient", "solver")
_BOUNDS = {"upper": "upper bound", "lower": "lower bound"}


def _default_model() -> str:
    from engine.models.catalog import DEFAULT_MODEL

    return DEFAULT_MODEL


def _exam(settings: JSONDict, person: bool) -> list[str]:
    if person:
        parts = [str(settings.get("mode") or "practice")]
        if settings.get("time_limit_s"):
            parts.append(f"{round(settings['time_limit_s'] / 60)} min")
        return parts
    parts = [
        str(settings.get("method", "generate")),
        f"{int(settings.get('shots') or 0)}-shot",
        str(settings.get("lang", "zh")),
        "instr" if settings.get("instruction", True) else "no instr",
    ]
    from engine.exam.prompts import PROMPT_VERSION
    from engine.exam.settings import ExamSettings, prompt_version_of

    version = prompt_version_of(settings)
    if version != PROMPT_VERSION:  # a run of other prompts is not comparable as it stands
        parts.append(f"prompts v{version}")
    defaults = ExamSettings().as_dict()
    for key in _EXAM_EXTRAS:
        default = defaults.get(key)
        value = settings.get(key, default)
        if value != default and not (key == "max_tokens" and parts[0] == "logprob"):
            parts.append(f"{key.replace('_', ' ')} {value}")
    return parts


def _french(settings: JSONDict) -> list[str]:
    if not settings.get("index"):
        parts = ["no passages"]
    else:
        retriever = settings.get("retriever") or settings["index"]
        parts = [f"{retriever} k={settings.get('k', 1)}"]
        if settings.get("corpus"):
            parts.append(str(settings["corpus"]))
    if settings.get("method") not in (None, "generate"):
        parts.append(str(settings["method"]))
    if settings.get("temperature"):
        parts.append(f"temperature {settings['temperature']}")
    threshold = settings.get("threshold")
    if settings.get("method") == "logprob" and threshold not in (None, 0.5):
        parts.append(f"threshold {threshold}")
    return parts


def _consult(run: Row, settings: JSONDict) -> list[str]:
    doctor = str(settings.get("doctor") or "model")
    names = {}
    for role in _CONSULT_ROLES:
        name = str(settings.get(role) or "model")
        if name == "model":
            name = (role == "doctor" and run.get("model")) or _default_model()
        names[role] = name
    patient = f"patient {names['patient']}"
    if settings.get("patient_mode"):
        patient = f"patient {settings['patient_mode']}/{names['patient']}"
    if doctor in _BOUNDS:
        parts = [_BOUNDS[doctor]]
    elif doctor.startswith("oracle-") or doctor == "person":
        parts = [doctor, patient]
    else:
        parts = [f"doctor {names['doctor']}", patient]
    if doctor != "person":
        parts.append(f"solver {names['solver']}")
    model_doctor = doctor not in _BOUNDS and not doctor.startswith("oracle-")
    if model_doctor and settings.get("style") == "short":
        parts.append("short prompt")
    if model_doctor and settings.get("max_turns") not in (None, 10):
        turns = int(settings["max_turns"])
        parts.append(f"{turns} turn{'' if turns == 1 else 's'}")
    if model_doctor and settings.get("stop_on_repeat"):
        parts.append("stops on a repeat")
    if model_doctor and settings.get("doctor_max_tokens") not in (None, 128):
        parts.append(f"doctor max tokens {settings['doctor_max_tokens']}")
    if settings.get("temperature"):
        parts.append(f"temperature {settings['temperature']}")
    if settings.get("answer_form") == "free":
        parts.append("answered in words")
    if settings.get("keep_conclusions") is False:
        parts.append("no conclusions")
    if settings.get("format") == "vignette":
        parts = ["vignette", f"solver {names['solver']}"]
    elif settings.get("format") == "summary":
        parts.append("from a summary")
    return parts


def exam_parts(run: Row) -> list[str]:
    """The words that tell an exam run apart (method, examples, language, instruction)."""
    settings = run.get("settings") or {}
    if settings.get("source") == "published":  # type: ignore[union-attr]
        return ["published", str(settings.get("setting") or settings.get("field") or "")]  # type: ignore[union-attr]
    return _exam(settings, run.get("runner") == "person")  # type: ignore[arg-type]


def french_parts(run: Row) -> list[str]:
    """The words that tell a French QA run apart (retriever, k, corpus)."""
    return _french(run.get("settings") or {})  # type: ignore[arg-type]


def consult_parts(run: Row) -> list[str]:
    """The words that tell a consultation run apart (doctor, patient, solver); a person's
    consultation is headed ``you`` in the doctor's place."""
    parts = _consult(run, run.get("settings") or {})  # type: ignore[arg-type]
    if run.get("runner") == "person" and parts:
        parts[0] = "you"
    return parts


def run_label(run: Row) -> str:
    """The settings that tell ``run`` (a stored run row) apart, in a few words, as its
    activity words them (``Activity.run_label``): the method, examples, prompt language and
    instruction of an exam; the doctor, patient and solver of a consultation; the
    retriever, k and corpus of French QA. A person's session starts with ``you``."""
    from engine.registry import activities

    person = run.get("runner") == "person"
    found = activities().get(str(run.get("activity")))
    words = found.run_label.load() if found is not None and found.run_label else None
    parts: list[str] = list(words(run)) if words is not None else []
    if person and parts[:1] != ["you"]:
        parts.insert(0, "you")
    return SEP.join(parts)


def label_matches(run: Row, text: str) -> bool:
    """Whether ``text`` (any case) appears in the run's label, model, data set or status."""
    needle = text.strip().lower()
    fields = (run_label(run), run.get("model"), run.get("dataset"), run.get("status"))
    hay = SEP.join(str(f or "") for f in fields)
    return needle in hay.lower()
