"""Flash attention for local models: off unless the ``flash_attn`` setting (or a model's own
settings) turn it on; each run stores what its models had."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.models.hardware import ModelSettings


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEDEXAM_HOME", str(tmp_path))
    return tmp_path


def test_flash_attention_is_off_unless_set() -> None:
    assert ModelSettings().resolved().flash_attn is False
    out = CliRunner().invoke(cli, ["models", "flash-attn", "on"])
    assert out.exit_code == 0 and "flash attention: on" in out.output
    assert ModelSettings().resolved().flash_attn is True
    assert ModelSettings(flash_attn=False).resolved().flash_attn is False  # a model's own
    CliRunner().invoke(cli, ["models", "flash-attn", "off"])
    assert ModelSettings().resolved().flash_attn is False
    bad = CliRunner().invoke(cli, ["models", "flash-attn", "sometimes"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_by_default_a_models_numbers_do_not_depend_on_its_threads() -> None:
    """medexam changes a model's threads with the machine's load, so its numbers must not
    depend on them: with flash attention (off by default) they do once the context is long
    (here the long candidate's log-probability, its tokens decoded one at a time, moved by 1.1
    between 1 and 2 threads with it)."""
    from engine.models.catalog import resolve
    from engine.models.local import LocalModel

    prompt = "Patient presents with fever and cough for three days. " * 90 + "Diagnosis:"
    candidates = [" community acquired pneumonia with a pleural effusion on the right side", " flu"]
    found = []
    for threads in (1, 2):
        with LocalModel(resolve().path, n_ctx=2048, n_threads=threads, slots=1) as m:
            assert m.info["flash_attn"] is False
            assert m.count_tokens(prompt) > 800
            found.append(m.logprobs(prompt, candidates))
    assert found[0] == found[1]
