"""Words for files that are not what they should be: an image, a binary file or a text cut
off mid-character is named so, a file of another format names the importer to use, and an
unknown data set's name is met with the nearest known one (command line and Import dialog)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.exam.dataset import ensure_sample
from engine.text.jsonio import RecordsError, read_records
from gui.widgets.qt_import import ImportDialog

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(40)
FRENCH = [
    {
        "id": "f1",
        "question": "Quel est l'antidote du paracétamol ?",
        "answers": {"a": "N-acétylcystéine", "b": "Naloxone", "c": "Atropine", "d": "K", "e": "C"},
        "correct_answers": ["a"],
        "subject_name": "pharmacie",
        "type": "single",
        "nbr_correct_answers": 1,
    }
]
CPE = [{"id": 1, "question": "Q?", "options": ["a", "b", "c", "d", "e"], "answer": "A",
        "explanation": "because"}]  # fmt: skip


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (PNG, "a PNG image, not a text file"),
        (b"\xff\xd8\xff\xe0" + bytes(20), "a JPEG image, not a text file"),
        (b'[{"id": 1}]\x00\x00\xfe', "a binary file, not text"),
        (('[{"q": "' + "药" * 2000).encode()[:-1], "cut off mid-character at its end (byte 6005 of 6007): the file looks truncated"),
        ('[{"q": "é"}]'.encode("latin-1"), "not UTF-8 text (byte 8): save it as UTF-8"),
    ],
)  # fmt: skip
def test_a_file_that_is_not_text_is_named_for_what_it_looks_like(tmp_path, data, said):
    path = tmp_path / "file.json"
    path.write_bytes(data)
    with pytest.raises(RecordsError) as err:
        read_records(path)
    assert str(err.value) == f"{path}: {said}"


def medexam(db: str, *args: str):
    return CliRunner().invoke(cli, ["--db", db, *args])


def test_the_command_line_names_the_file_and_the_format_it_looks_like(db_path, tmp_path):
    png = tmp_path / "scan.png"
    png.write_bytes(PNG)
    out = medexam(db_path, "import", "explaincpe", str(png))
    assert (
        out.exit_code == 1 and out.output.strip() == "Error: scan.png: a PNG image, not a text file"
    )
    french = tmp_path / "dev.json"
    french.write_text(json.dumps(FRENCH), encoding="utf-8")
    out = medexam(db_path, "import", "explaincpe", str(french))
    assert out.exit_code == 1, out.output
    assert out.output.startswith(
        "Error: this looks like a FrenchMedMCQA file: import it with `import frenchmedmcqa` ("
    )
    assert "'options' must be a list of texts" in out.output
    cpe = tmp_path / "cpe.json"
    cpe.write_text(json.dumps(CPE), encoding="utf-8")
    out = medexam(db_path, "import", "frenchmedmcqa", str(cpe))
    assert "this looks like an ExplainCPE file: import it with `import explaincpe`" in out.output
    assert len(out.output.strip().splitlines()) == 1


def test_an_unknown_data_set_is_met_with_the_nearest_known(store):
    ensure_sample(store)
    with pytest.raises(Exception) as err:
        store.dataset("explaincpe-smaple")
    assert str(err.value) == (
        "no data set named 'explaincpe-smaple' "
        "(did you mean 'explaincpe-sample'? known: explaincpe-sample)"
    )
    with pytest.raises(Exception, match=r"'zzz' \(known: explaincpe-sample\)$"):
        store.dataset("zzz")


@pytest.mark.gui
def test_the_import_dialog_says_an_image_is_one(qtbot, window, tmp_path):
    png = tmp_path / "scan.png"
    png.write_bytes(PNG)
    d = ImportDialog(window.ctx, "exam", window)
    qtbot.addWidget(d)
    d.format.setCurrentIndex(d.format.findData("explaincpe"))
    d.show()
    d.path.setText(str(png))
    d.import_button.click()
    qtbot.waitUntil(lambda: d.message.text() != "" and d.job is None)
    assert d.message.text().endswith("scan.png: a PNG image, not a text file")
    french = tmp_path / "dev.json"
    french.write_text(json.dumps(FRENCH), encoding="utf-8")
    d.path.setText(str(french))
    d.import_button.click()
    qtbot.waitUntil(lambda: d.job is None and "FrenchMedMCQA" in d.message.text())
    assert "import it with `import frenchmedmcqa`" in d.message.text()
