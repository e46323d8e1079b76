"""Import AgentClinic cases: the OSCE files (MedQA, MedQA-extended, MIMIC-IV: one
``{"OSCE_Examination": {...}}`` per line) and the NEJM image-challenge files.

The format is recognised from the records (:func:`detect_format`): a record with
``OSCE_Examination`` (or its sections) is an OSCE case; one with ``patient_info`` and
``answers`` is a NEJM case. MedQA and MedQA-extended share the OSCE layout and are told
apart by the file name only.

OSCE: each record's ``Patient_Actor``, ``Physical_Examination_Findings`` and ``Test_Results`` (and
any other section except the objective and the diagnosis) are flattened into readable key–value
facts: nested names are joined with `` - `` and underscores become spaces, so
``Physical_Examination_Findings.Vital_Signs.Blood_Pressure`` becomes the fact
``Vital signs - Blood pressure``. Lists of texts become one value joined with ``; ``; lists of
objects are numbered. Values that only say nothing was recorded ("Information not provided")
are dropped. The primary symptom (or else the objective) becomes the opening request, in the
first person and in everyday words; ``Correct_Diagnosis`` becomes the task ``{diagnosis}``.

NEJM (``question``, free-text ``patient_info`` and ``physical_exams``, ``answers`` as
``[{"text", "correct"}]``, ``image_url``): the free text is cut into sentences, each a fact
keyed ``History``, ``Examination`` or ``Test results`` (:func:`nejm_facts`); the answers
become a multiple-choice task with the correct letter; the image URL is kept in the case's
``meta`` as a reference and never fetched.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from engine.consult.cases.cases import Case, CaseError, Fact, Task, save_cases
from engine.consult.text import lay_words
from engine.store.store import Store
from engine.text import jsonio

if TYPE_CHECKING:
    from engine.types import JSONDict, JSONValue

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


def _scalar(value: JSONValue) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = str(value).strip()
    if text.lower().rstrip(".") in _EMPTY_VALUES:
        return None
    return text


def flatten(value: JSONValue, key: str = "") -> list[Fact]:
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


def _complaint(osce: JSONDict) -> str:
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


def opening_request(osce: JSONDict) -> str:
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


def convert_record(record: JSONValue, case_id: str, number: int | None = None) -> Case:
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
    return read_agentclinic_file(path, prefix)[0]


def read_agentclinic_file(path: str | Path, prefix: str | None = None) -> tuple[list[Case], str]:
    """The cases of an AgentClinic file and the format found (:data:`FORMAT_NAMES`)."""
    path = Path(path)
    prefix = prefix or path.stem
    try:
        records = jsonio.read_records(path, keys=(), objects=False)
    except jsonio.RecordsError as exc:
        raise CaseError(f"{path.name}: {exc.detail}") from None
    if not records:
        raise CaseError("the file holds no records")
    found = detect_format(records[0], path.name)
    convert = convert_nejm if found.startswith("nejm") else convert_record
    cases = [convert(r, f"{prefix}-{n:03d}", n) for n, r in enumerate(records, 1)]
    return cases, found


def import_agentclinic(
    store: Store, path: str | Path, name: str | None = None, replace: bool = False
) -> int:
    """Import an AgentClinic file (any of :data:`FORMAT_NAMES`) as a consultation data set;
    return its id. The data set's ``meta`` names the format found (``agentclinic_format``)."""
    path = Path(path)
    name = name or path.stem
    cases, found = read_agentclinic_file(path, prefix=name)
    meta = {"format": "agentclinic", "agentclinic_format": found}
    return save_cases(store, name, cases, source=path.name, meta=meta, replace=replace)


# -- formats --------------------------------------------------------------------------------

#: The AgentClinic formats and how they are named to the user.
FORMAT_NAMES = {
    "medqa": "AgentClinic MedQA (OSCE)",
    "medqa-extended": "AgentClinic MedQA-extended (OSCE)",
    "mimic": "AgentClinic MIMIC-IV (OSCE)",
    "nejm": "AgentClinic NEJM",
    "nejm-extended": "AgentClinic NEJM-extended",
}

_OSCE_SECTIONS = {"patient_actor", "correct_diagnosis", "objective_for_doctor"}


def detect_format(record: JSONValue, file_name: str = "") -> str:
    """The format of an AgentClinic record (a key of :data:`FORMAT_NAMES`); ``file_name``
    tells MedQA from MedQA-extended (and MIMIC-IV), which share the OSCE layout."""
    name = file_name.lower()
    extended = "-extended" if "extended" in name else ""
    if isinstance(record, dict):
        keys = {str(k).lower() for k in record}
        if "osce_examination" in keys or keys & _OSCE_SECTIONS:
            return "mimic" if "mimic" in name else f"medqa{extended}"
        if "patient_info" in keys or "answers" in keys:
            return f"nejm{extended}"
    raise CaseError(
        "not an AgentClinic record: expected 'OSCE_Examination' (MedQA, MIMIC-IV) or "
        "'patient_info' and 'answers' (NEJM)"
    )


_TEST_WORDS = re.compile(
    r"\b(laborator\w*|levels?|counts?|serum|plasma|urinalysis|biopsy|cultures?|radiograph\w*|"
    r"x-rays?|CT|MRI|PET|ultrasound|ultrasonograph\w*|sonograph\w*|imaging|scans?|ECG|EKG|"
    r"electrocardiogra\w*|echocardiogra\w*|tests?|testing|assays?|PCR|antibod\w*|stain\w*|"
    r"histolog\w*|patholog\w*|specimens?|hemoglobin|haemoglobin|platelets?|creatinine|"
    r"mg/dl|mmol|g/dl|endoscop\w*|colonoscop\w*|angiogra\w*|smear|preparation|"
    r"scrapings?|microscop\w*|dermoscop\w*|aspirat\w*)\b",
    re.IGNORECASE,
)
_EXAM_WORDS = re.compile(
    r"\b(examination|exam|on palpation|palpat\w*|auscultat\w*|temperature|blood pressure|"
    r"pulse|heart rate|respiratory rate|oxygen saturation|afebrile|tender\w*|inspection)\b",
    re.IGNORECASE,
)
_SENTENCES = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(])")


def _sentences(text: JSONValue) -> list[str]:
    text = _scalar(text) if not isinstance(text, list | dict) else None
    if not text:
        return []
    return [s.strip() for s in _SENTENCES.split(" ".join(text.split())) if s.strip()]


def nejm_facts(patient_info: JSONValue, physical_exams: JSONValue) -> list[Fact]:
    """Key–value facts from a NEJM case's free text, one per sentence: ``Test results`` for a
    sentence naming a test (laboratory, imaging, biopsy…), ``Examination`` for one from
    the examination text or naming a finding on examination, ``History`` otherwise."""
    facts = []
    for source, text in (("history", patient_info), ("exam", physical_exams)):
        if isinstance(text, dict | list):
            facts.extend(flatten(text, "Examination" if source == "exam" else "History"))
            continue
        for sentence in _sentences(text):
            if _TEST_WORDS.search(sentence):
                key = "Test results"
            elif source == "exam" or _EXAM_WORDS.search(sentence):
                key = "Examination"
            else:
                key = "History"
            facts.append(Fact(key, sentence))
    return facts


_PRESENTS = re.compile(
    r"\b(?:present(?:s|ed)?|came|comes|was (?:brought|referred|evaluated)|reports?|reported)"
    r"(?: to [^,.]*?)? (?:with|because of|for evaluation of|for)\s+(.+?)(?:\.|;|$)",
    re.IGNORECASE,
)


def nejm_opening(patient_info: JSONValue) -> str:
    """P0 for a NEJM case: the presenting complaint of the first sentences, first person."""
    text = " ".join(_sentences(patient_info)[:2])
    m = _PRESENTS.search(text)
    complaint = m.group(1).strip() if m else ""
    complaint = re.sub(r",? (?:and|with) (?:a|an) (?:\w+ )?history of .*$", "", complaint)
    if not _CHILD.search(text[:80]):  # an adult speaks of themself
        complaint = re.sub(r"\b(his|her)\b", "my", complaint)
    osce = {"Patient_Actor": {"Demographics": text[:80], "Symptoms": {}}}
    if complaint:
        osce["Patient_Actor"]["Symptoms"] = {"Primary_Symptom": complaint}
    return opening_request(osce)


def convert_nejm(record: JSONValue, case_id: str, number: int | None = None) -> Case:
    """One NEJM record as a case with a multiple-choice task."""
    where = f"record {number}: " if number is not None else ""
    if not isinstance(record, dict):
        raise CaseError(where + "expected an object")
    answers = record.get("answers")
    if not isinstance(answers, list) or len(answers) < 2:
        raise CaseError(where + "'answers' must list at least two {text, correct}")
    options, answer = {}, ""
    for letter, option in zip("ABCDEFGHIJ", answers, strict=False):
        text = _scalar(option.get("text")) if isinstance(option, dict) else None
        if not text:
            raise CaseError(where + f"answer {letter} has no 'text'")
        options[letter] = text
        if isinstance(option, dict) and option.get("correct") is True and not answer:
            answer = letter
    if not answer:
        raise CaseError(where + "no answer is marked 'correct': true")
    facts = nejm_facts(record.get("patient_info"), record.get("physical_exams"))
    if not facts:
        raise CaseError(where + "no patient information ('patient_info', 'physical_exams')")
    meta: JSONDict = {}
    if _scalar(record.get("image_url")):
        meta["image_url"] = str(record["image_url"])
    question = _scalar(record.get("question")) or "What is the most likely diagnosis?"
    return Case(
        id=case_id,
        facts=facts,
        initial_request=nejm_opening(record.get("patient_info")),
        task=Task(question=question, options=options, answer=answer),
        language="en",
        source="AgentClinic NEJM",
        meta=meta,
    )
