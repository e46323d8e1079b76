"""The words that tell a consultation run apart in its label
(:func:`engine.reports.label.run_label`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.types import JSONDict, Row

_CONSULT_ROLES = ("doctor", "patient", "solver")
_BOUNDS = {"upper": "upper bound", "lower": "lower bound"}


def _default_model() -> str:
    from engine.models.catalog import DEFAULT_MODEL

    return DEFAULT_MODEL


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


def consult_parts(run: Row) -> list[str]:
    """The words that tell a consultation run apart (doctor, patient, solver); a person's
    consultation is headed ``you`` in the doctor's place."""
    parts = _consult(run, run.get("settings") or {})
    if run.get("runner") == "person" and parts:
        parts[0] = "you"
    return parts
