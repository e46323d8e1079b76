"""Import AgentClinic OSCE cases (JSONL, one ``{"OSCE_Examination": {...}}`` per line).

Each record's ``Patient_Actor``, ``Physical_Examination_Findings`` and ``Test_Results`` (and any
other section except the objective and the diagnosis) are flattened into readable key–value
facts: nested names are joined with `` - `` and underscores become spaces, so
``Physical_Examination_Findings.Vital_Signs.Blood_Pressure`` becomes the fact
``Vital signs - Blood pressure``. Lists of texts become one value joined with ``; ``; lists of
objects are numbered. Values that only say nothing was recorded ("Information not provided")
are dropped. The primary symptom (or else the objective) becomes the opening request, in the
first person and in everyday words; ``Correct_Diagnosis`` becomes the task ``{diagnosis}``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from engine.consult.cases import Case, CaseError, Fact, Task, save_cases
from engine.consult.text import lay_words
from engine.store import Store

# Sections flattened without their own name in front of the keys.
_UNPREFIXED = {"patient_actor", "physical_examination_findings", "test_results"}
_NOT_FACTS = {"objective_for_doctor", "correct_diagnosis"}
_EMPTY_VALUES = {
    "",
    "n/a",
    "na",
    "not provided",
    "information not provided",
    "not available",
    "not applicable",
    "none provided",
    "not documented",
    "unknown",
    "not specified",
}


def humanize(name: str) -> str:
    """``Blood_Pressure`` → ``Blood pressure``; ``Chest_CT`` → ``Chest CT``."""
    words = [w for w in re.split(r"[_\s]+", str(name).strip()) if w]
    out = []
    for i, word in enumerate(words):
        if any(c.isupper() for c in word[1:]):
            out.append(word)  # acronym or mixed case: CT, HEENT, XRay, HbA1c
        elif i == 0:
            out.append(word[:1].upper() + word[1:].lower())
        else:
            out.append(word.lower())
    return " ".join(out)


def _scalar(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = str(value).strip()
    if text.lower().rstrip(".") in _EMPTY_VALUES:
        return None
    return text


def flatten(value: Any, key: str = "") -> list[Fact]:
    """Facts from a nested dict/list/scalar of any depth; ``key`` names ``value`` itself."""
    if isinstance(value, dict):
        facts: list[Fact] = []
        for name, sub in value.items():
            sub_key = f"{key} - {humanize(name)}" if key else humanize(name)
            facts.extend(flatten(sub, sub_key))
        return facts
    if isinstance(value, list | tuple):
        if all(not isinstance(v, dict | list | tuple) for v in value):
            texts = [t for t in (_scalar(v) for v in value) if t]
            return [Fact(key or "Information", "; ".join(texts))] if texts else []
        facts = []
        for i, sub in enumerate(value, 1):
            sub_key = f"{key} {i}" if key else f"Item {i}"
            facts.extend(flatten(sub, sub_key))
        return facts
    text = _scalar(value)
    return [Fact(key or "Information", text)] if text else []


def _lower_first(text: str) -> str:
    word = text.split(" ", 1)[0]
    if len(word) > 1 and word.isupper():
        return text
    return text[:1].lower() + text[1:]


_CHILD = re.compile(
    r"\b(newborn|neonate|infant|baby|toddler|\d+[- ](day|week|month)s?[- ]old|"
    r"([1-9]|1[0-5])[- ]years?[- ]old (boy|girl|child))\b",
    re.IGNORECASE,
)


def _complaint(osce: dict[str, Any]) -> str:
    actor = osce.get("Patient_Actor") if isinstance(osce.get("Patient_Actor"), dict) else {}
    symptoms = actor.get("Symptoms") if isinstance(actor, dict) else None
    primary = symptoms.get("Primary_Symptom") if isinstance(symptoms, dict) else None
    if isinstance(primary, list):
        primary = ", ".join(str(p) for p in primary)
    text = _scalar(primary) if primary else None
    if not text:
        objective = _scalar(osce.get("Objective_for_Doctor")) or ""
        m = re.search(r"presenting with (.+?)(?:\.|$)", objective, re.IGNORECASE)
        text = m.group(1) if m else ""
        text = re.sub(r",? and (a|an) [^,]*history$", "", text).strip()
    if not text:
        return ""
    text = re.sub(r"^(presence|history|complaints?) of ", "", text, flags=re.IGNORECASE)
    text = re.sub(r"^episodes? of ", "an episode of ", text, flags=re.IGNORECASE)
    text = re.sub(r"^new[- ]onset ", "", text, flags=re.IGNORECASE)
    return lay_words(_lower_first(text.rstrip(". ")))


def opening_request(osce: dict[str, Any]) -> str:
    """P0 for an OSCE record: the complaint in the first person and everyday words."""
    complaint = _complaint(osce)
    actor = osce.get("Patient_Actor") if isinstance(osce.get("Patient_Actor"), dict) else {}
    demographics = _scalar(actor.get("Demographics")) if isinstance(actor, dict) else None
    child = bool(demographics and _CHILD.search(demographics))
    if not complaint:
        who = "my child isn't" if child else "I'm not"
        return f"Hello doctor, {who} feeling well. Can you help us find out what is wrong?"
    if child:
        return (
            f"Hello doctor, I've brought my child in because of {complaint}. "
            "Can you help us find out what is wrong?"
        )
    return (
        f"Hello doctor, I've come in because of {complaint}. "
        "Can you help me find out what is wrong?"
    )


def convert_record(record: Any, case_id: str, number: int | None = None) -> Case:
    """One AgentClinic record (with or without the ``OSCE_Examination`` wrapper) as a case."""
    where = f"record {number}: " if number is not None else ""
    if not isinstance(record, dict):
        raise CaseError(where + "expected an object")
    osce = record.get("OSCE_Examination", record)
    if not isinstance(osce, dict):
        raise CaseError(where + "'OSCE_Examination' is not an object")
    diagnosis = _scalar(osce.get("Correct_Diagnosis"))
    if isinstance(osce.get("Correct_Diagnosis"), list | dict):
        diagnosis = "; ".join(f.value for f in flatten(osce["Correct_Diagnosis"]))
    if not diagnosis:
        raise CaseError(where + "missing 'Correct_Diagnosis'")
    facts: list[Fact] = []
    for section, value in osce.items():
        name = str(section).lower()
        if name in _NOT_FACTS:
            continue
        prefix = "" if name in _UNPREFIXED else humanize(section)
        if not isinstance(value, dict | list) and not prefix:
            prefix = humanize(section)
        facts.extend(flatten(value, prefix))
    if not facts:
        raise CaseError(where + "no patient information (Patient_Actor, findings or tests)")
    meta = {}
    objective = _scalar(osce.get("Objective_for_Doctor"))
    if objective:
        meta["objective"] = objective
    return Case(
        id=case_id,
        facts=facts,
        initial_request=opening_request(osce),
        task=Task(question="What is the most likely diagnosis?", diagnosis=diagnosis),
        language="en",
        source="AgentClinic OSCE",
        meta=meta,
    )


def read_agentclinic(path: str | Path, prefix: str | None = None) -> list[Case]:
    """All records of an AgentClinic JSONL file (or JSON array) as cases ``<prefix>-001``…"""
    path = Path(path)
    prefix = prefix or path.stem
    text = path.read_text(encoding="utf-8-sig")
    if text.lstrip().startswith("["):
        records = json.loads(text)
    else:
        records = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise CaseError(f"record on line {n}: not valid JSON ({exc.msg})") from None
    cases = [convert_record(r, f"{prefix}-{n:03d}", n) for n, r in enumerate(records, 1)]
    if not cases:
        raise CaseError("the file holds no records")
    return cases


def import_agentclinic(
    store: Store, path: str | Path, name: str | None = None, replace: bool = False
) -> int:
    """Import an AgentClinic OSCE file as a consultation data set; return its id."""
    path = Path(path)
    name = name or path.stem
    cases = read_agentclinic(path, prefix=name)
    return save_cases(
        store, name, cases, source=path.name, meta={"format": "agentclinic"}, replace=replace
    )
