"""The import dialog offers what the importer registry registers, labelled as it labels them."""

from __future__ import annotations

from engine.importers import activities, formats, get_format


def test_the_agentclinic_importer_names_every_set_it_reads():
    label = get_format("consult", "agentclinic").label
    assert all(name in label for name in ("MedQA", "MIMIC-IV", "NEJM"))
    assert "OSCE cases" not in label


def test_the_import_dialog_reads_its_kinds_from_the_registry():
    from gui.widgets.qt_import import kinds

    titles = activities()
    assert list(kinds()) == list(titles) == ["exam", "consult", "french", "corpus"]
    for kind, (title, offered) in kinds().items():
        assert title == titles[kind]
        assert offered == [(f.key, f.label, f.filter, f.folder) for f in formats(kind)]
