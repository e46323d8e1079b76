"""Anki packages: opened with zipfile + sqlite3 to check the decks, the notes' fields and
tags, and that a second export keeps every id (Anki then updates the same notes)."""

from __future__ import annotations

import json
import sqlite3
import zipfile
from pathlib import Path

import pytest

from engine.exam.dataset import ensure_sample
from engine.french.dataset import ensure_sample as ensure_french
from engine.review import record_answer
from engine.review.anki import ExportError, export_anki, note_guid


def read_package(path: Path) -> dict:
    with zipfile.ZipFile(path) as z:
        data = z.read("collection.anki2")
    db_file = path.with_name(path.stem + ".anki2")
    db_file.write_bytes(data)
    con = sqlite3.connect(db_file)
    try:
        notes = con.execute("SELECT guid, mid, flds, tags FROM notes").fetchall()
        cards = con.execute("SELECT nid, did FROM cards").fetchall()
        decks = json.loads(con.execute("SELECT decks FROM col").fetchone()[0])
        models = json.loads(con.execute("SELECT models FROM col").fetchone()[0])
    finally:
        con.close()
    return {
        "notes": {
            g: {"mid": mid, "fields": f.split("\x1f"), "tags": t.split()} for g, mid, f, t in notes
        },
        "cards": cards,
        "decks": {d["name"]: int(i) for i, d in decks.items() if d["name"] != "Default"},
        "models": {m["name"]: int(i) for i, m in models.items()},
    }


@pytest.fixture
def answered(store):
    exam = ensure_sample(store)
    french = ensure_french(store)["dataset"]
    e, f = store.items(exam), store.items(french)
    record_answer(store, "exam", exam, e[0], False, seconds=5)
    record_answer(store, "exam", exam, e[1], True, seconds=5)
    record_answer(store, "french", french, f[0], False)
    return store, (exam, e), (french, f)


def test_decks_notes_fields_and_tags(answered, tmp_path):
    store, (exam, e), (french, f) = answered
    result = export_anki(store, tmp_path / "all.apkg")
    assert result["notes"] == 3
    assert result["decks"] == {"medexam::Exam": 2, "medexam::French QA": 1}
    pkg = read_package(tmp_path / "all.apkg")
    assert set(pkg["decks"]) == {"medexam::Exam", "medexam::French QA"}
    assert len(pkg["cards"]) == 3 and list(pkg["models"]) == ["medexam question"]

    missed = pkg["notes"][note_guid(exam, e[0]["id"])]
    question, options, answer, explanation, source, note = missed["fields"]
    assert question == e[0]["question"]
    assert options.split("<br>")[0] == f"A. {e[0]['options'][0]}"
    gold = e[0]["answer"]
    assert answer == f"{gold}. {e[0]['options'][ord(gold) - 65]}"
    assert explanation == e[0]["explanation"]
    assert source == f"{exam} #{e[0]['id']}" and note == ""
    assert "missed" in missed["tags"] and "medexam::exam" in missed["tags"]
    assert f"dataset::{exam}" in missed["tags"] and f"type3::{e[0]['type3']}" in missed["tags"]
    right = pkg["notes"][note_guid(exam, e[1]["id"])]
    assert "missed" not in right["tags"]

    fr = pkg["notes"][note_guid(french, f[0]["id"])]
    letters = [c.upper() for c in f[0]["correct_answers"]]
    assert fr["fields"][2].split("<br>") == [f"{c}. {f[0]['answers'][c.lower()]}" for c in letters]
    assert f"type::{f[0]['type']}" in fr["tags"]


def test_marks_notes_and_reasons_go_with_the_notes(answered, tmp_path):
    from engine.bank.notebook import mark, set_note, set_reason

    store, (exam, e), _french = answered
    mark(store, "default", "exam", exam, e[0]["id"])
    set_note(store, "default", "exam", exam, e[0]["id"], "INR <b>not</b> aPTT")
    set_reason(store, "default", "exam", exam, e[0]["id"], "misread")
    export_anki(store, tmp_path / "noted.apkg")
    notes = read_package(tmp_path / "noted.apkg")["notes"]
    noted = notes[note_guid(exam, e[0]["id"])]
    assert noted["fields"][5] == "INR &lt;b&gt;not&lt;/b&gt; aPTT"
    assert "marked" in noted["tags"] and "missed::misread" in noted["tags"]
    plain = notes[note_guid(exam, e[1]["id"])]
    assert "marked" not in plain["tags"] and plain["fields"][5] == ""


def test_a_second_export_keeps_every_id(answered, tmp_path):
    store, (exam, e), _french = answered
    export_anki(store, tmp_path / "one.apkg")
    record_answer(store, "exam", exam, e[0], True, seconds=5)  # now right
    record_answer(store, "exam", exam, e[2], False, seconds=5)  # a new card
    export_anki(store, tmp_path / "two.apkg")
    one, two = read_package(tmp_path / "one.apkg"), read_package(tmp_path / "two.apkg")
    assert set(one["notes"]) < set(two["notes"]) and len(two["notes"]) == 4
    assert one["decks"] == two["decks"] and one["models"] == two["models"]
    guid = note_guid(exam, e[0]["id"])
    assert "missed" in one["notes"][guid]["tags"] and "missed" not in two["notes"][guid]["tags"]
    assert one["notes"][guid]["fields"] == two["notes"][guid]["fields"]


def test_only_missed_and_refusals(answered, tmp_path):
    store, (exam, e), (french, f) = answered
    result = export_anki(store, tmp_path / "missed.apkg", only_missed=True)
    guids = set(read_package(tmp_path / "missed.apkg")["notes"])
    assert result["notes"] == 2
    assert guids == {note_guid(exam, e[0]["id"]), note_guid(french, f[0]["id"])}
    with pytest.raises(ExportError, match="is a folder"):
        export_anki(store, tmp_path)
    with pytest.raises(ExportError, match="does not exist"):
        export_anki(store, tmp_path / "nowhere" / "x.apkg")
    with pytest.raises(ExportError, match="no missed questions to export in profile 'kim'"):
        export_anki(store, tmp_path / "kim.apkg", profile="kim", only_missed=True)
