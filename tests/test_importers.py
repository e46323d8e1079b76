"""engine.importers: one call imports any data set or corpus, and lists what each accepts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from engine.core.progress import Cancel, Cancelled, Progress
from engine.importers import ImportFormatError, activities, formats, get_format, import_data
from engine.paths import samples_dir
from engine.store.store import StoreError

OSCE = {
    "OSCE_Examination": {
        "Objective_for_Doctor": "Assess and diagnose the patient presenting with chest pain.",
        "Patient_Actor": {
            "Demographics": "54-year-old man",
            "Symptoms": {"Primary_Symptom": "Crushing chest pain"},
        },
        "Correct_Diagnosis": "Myocardial infarction",
    }
}


def test_every_activity_lists_its_formats():
    assert activities() == {
        "exam": "Exam questions",
        "consult": "Consultation cases",
        "french": "French questions",
        "corpus": "French corpus",
    }
    keys = {a: [f.key for f in formats(a)] for a in activities()}
    assert keys == {
        "exam": ["explaincpe", "mcq"],
        "consult": ["cases", "agentclinic"],
        "french": ["frenchmedmcqa"],
        "corpus": ["file", "folder", "dataset"],
    }
    mcq = get_format("exam", "mcq")
    assert "CSV" in mcq.label and "*.csv" in mcq.filter and mcq.source == "file"
    assert get_format("corpus", "folder").folder and get_format("corpus", "dataset").filter == ""
    assert get_format("corpus", "path").key == "file"
    with pytest.raises(ImportFormatError, match="choose from explaincpe, mcq"):
        get_format("exam", "csv")
    with pytest.raises(ImportFormatError, match="nothing imports as 'quiz'"):
        formats("quiz")


def test_exam_questions(store, tmp_path: Path):
    result = import_data(store, "exam", "explaincpe", samples_dir() / "explaincpe_sample.json")
    row = store.dataset("explaincpe_sample")
    assert result["id"] == row["id"] and result["activity"] == "exam"
    assert result["message"] == f"Imported {row['n_items']} questions as “explaincpe_sample”."
    quiz = tmp_path / "quiz.jsonl"
    quiz.write_text(
        json.dumps({"id": 1, "question": "2+2?", "options": ["3", "4"], "answer": "B"}) + "\n"
    )
    assert import_data(store, "exam", "mcq", quiz, name="q")["message"] == (
        "Imported 1 questions as “q”."
    )
    with pytest.raises(StoreError, match="already exists"):
        import_data(store, "exam", "mcq", quiz, name="q")
    assert import_data(store, "exam", "mcq", quiz, name="q", replace=True)["n_items"] == 1


def test_consultation_cases(store, tmp_path: Path):
    result = import_data(store, "consult", "cases", samples_dir() / "cases_sample.json", "mine")
    assert result["message"] == f"Imported {result['n_items']} cases as “mine”."
    osce = tmp_path / "osce.jsonl"
    osce.write_text(json.dumps(OSCE) + "\n" + json.dumps(OSCE) + "\n")
    result = import_data(store, "consult", "agentclinic", osce)
    assert result["name"] == "osce" and result["n_items"] == 2
    assert result["message"] == "Imported 2 cases as “osce”."


def test_french_questions_and_corpora(store, tmp_path: Path):
    src = samples_dir() / "frenchmedmcqa_sample.json"
    result = import_data(store, "french", "frenchmedmcqa", src, "fr")
    assert result["message"] == "Imported 15 questions as “fr”."
    assert result["activity"] == "french" and result["duplicates_skipped"] == []

    seen: list[Progress] = []
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(samples_dir() / "french_passages.jsonl", tmp_path / "passages.jsonl")
    (docs / "a.txt").write_text("Le paracétamol est hépatotoxique à forte dose. " * 6)
    from_file = import_data(store, "corpus", "file", tmp_path / "passages.jsonl",
                            progress=seen.append)  # fmt: skip
    assert from_file["name"] == "passages" and from_file["n_passages"] > 0
    assert (
        from_file["message"] == f"Stored {from_file['n_passages']} passages as corpus “passages”."
    )
    assert seen and seen[-1].done == seen[-1].total
    from_folder = import_data(store, "corpus", "folder", docs)
    assert from_folder["name"] == "docs" and from_folder["n_documents"] == 1
    from_path = import_data(store, "corpus", "path", docs, "docs-2")
    assert from_path["fingerprint"] == from_folder["fingerprint"]
    from_dataset = import_data(store, "corpus", "dataset", "fr")
    assert from_dataset["name"] == "fr-passages" and from_dataset["n_passages"] == 15
    assert store.corpus("fr-passages")["id"] == from_dataset["id"]


def test_a_cancelled_import_stores_nothing(store):
    cancel = Cancel()
    cancel.set()
    with pytest.raises(Cancelled):
        import_data(store, "exam", "explaincpe", samples_dir() / "explaincpe_sample.json",
                    cancel=cancel)  # fmt: skip
    assert store.datasets() == []


def test_errors_are_the_importers_own(store, tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\n{oops\n')
    with pytest.raises(ValueError, match="line 2: not valid JSON"):
        import_data(store, "consult", "cases", bad)
    with pytest.raises(ValueError, match="no such file"):
        import_data(store, "french", "frenchmedmcqa", tmp_path / "none.json")
    assert store.datasets() == []


def test_the_import_dialog_job_calls_the_registry(store):
    from gui.widgets.qt_import import import_job

    job = SimpleNamespace(store=store, progress=None, cancel=None)
    src = str(samples_dir() / "cases_sample.json")
    report = import_job(job, "consult", "cases", src, "c", False)
    assert report == f"Imported {store.dataset('c')['n_items']} cases as “c”."
