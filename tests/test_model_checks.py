"""Model files that cannot be used are listed with their reason; a default model that cannot
be loaded gives way to the embedded one, said once, and stops being the default."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from model_files import cut_copy, tiny_llama

from engine import settings
from engine.cli import cli
from engine.models import catalog
from engine.models.checks import (
    acquire_default,
    checked_default,
    default_model,
    problems,
    set_default_model,
)
from engine.models.load import LoadSettings
from engine.models.pool import ModelPool


def test_a_truncated_file_is_listed_with_its_reason_and_not_offered(models_folder):
    size = Path(catalog.resolve("smollm2").path).stat().st_size
    cut = cut_copy(models_folder / "cut.gguf", 8_000_000)
    (models_folder / "notes.gguf").write_text("not a model")
    found = {p.name: p for p in problems()}
    assert found["cut"].reason == f"truncated: 8 MB of {size / 1e6:.0f} MB expected"
    assert found["cut"].path == str(cut) and found["cut"].origin == "folder"
    assert found["notes"].reason.startswith("not a GGUF model file")
    assert not {"cut", "notes"} & {m.name for m in catalog.list_models()}

    table = CliRunner().invoke(cli, ["models", "list"])
    assert table.exit_code == 0
    assert f"  {cut} (models folder): truncated: 8 MB of" in table.output
    rows = json.loads(CliRunner().invoke(cli, ["models", "list", "--json"]).output)
    bad = next(r for r in rows if r["name"] == "cut")
    assert bad["usable"] is False and bad["problem"].startswith("truncated")
    assert "reason" not in bad  # one key for the problem
    assert next(r for r in rows if r["name"] == "smollm2")["usable"] is True

    unknown = CliRunner().invoke(cli, ["models", "info", "nope"])
    assert unknown.exit_code == 1
    known = unknown.output.split("(known: ")[1].split(")")[0].split(", ")
    assert known == sorted(m.name for m in catalog.list_models())
    assert "smollm2" in known and not {"cut", "notes"} & set(known)


def test_a_header_cut_short_is_truncated_too(models_folder):
    cut_copy(models_folder / "head.gguf", 4000)
    (problem,) = problems()
    assert problem.reason == "truncated: the file ends inside its header (4 kB)"


def test_a_damaged_default_falls_back_to_the_embedded_model(models_folder, tmp_path, caplog):
    added = tiny_llama(tmp_path / "mine.gguf")
    catalog.add_model(added)
    set_default_model("mine")
    assert default_model() == "mine" and catalog.resolve(None).name == "mine"
    cut_copy(added, 4000)  # damaged after it was added
    assert [p.name for p in problems()] == ["mine"]
    name, message = checked_default()
    assert name == "smollm2"
    assert message == (
        "mine could not be loaded (truncated: the file ends inside its header (4 kB)); "
        "using the embedded smollm2 instead, now the default model"
    )
    assert settings.get("model") == "" and checked_default() == ("smollm2", "")
    catalog.remove_model("mine")


def test_a_default_that_fails_to_load_gives_way_once(models_folder, tmp_path):
    set_default_model(str(tiny_llama(models_folder / "empty.gguf")))
    assert default_model() == "empty"
    pool = ModelPool(load=LoadSettings(n_ctx=512), cores=1)
    try:
        model, message = acquire_default(pool)
        assert model.name == "smollm2"
        assert message.startswith("empty could not be loaded (")
        assert message.endswith("using the embedded smollm2 instead, now the default model")
        model.close()
        again, message = acquire_default(pool)
        assert again.name == "smollm2" and message == ""
        again.close()
    finally:
        pool.close()
