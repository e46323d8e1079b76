"""Flash attention for local models: on for a model on the CPU alone (llama-server's auto
there), off where layers go to a GPU, or as the ``flash_attn`` setting says; each run stores
what its models had."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.models.hardware import ModelSettings, flash_attn_for


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEDEXAM_HOME", str(tmp_path))
    return tmp_path


def test_flash_attention_is_on_for_the_cpu_alone_unless_set() -> None:
    assert ModelSettings().resolved().flash_attn is None  # auto: the model process decides
    assert flash_attn_for(None, 0) is True and flash_attn_for(None, 12) is False
    assert flash_attn_for(False, 0) is False and flash_attn_for(True, 12) is True
    out = CliRunner().invoke(cli, ["models", "flash-attn", "off"])
    assert out.exit_code == 0 and "flash attention: off" in out.output
    assert ModelSettings().resolved().flash_attn is False
    CliRunner().invoke(cli, ["models", "flash-attn", "on"])
    assert ModelSettings().resolved().flash_attn is True
    assert ModelSettings(flash_attn=False).resolved().flash_attn is False  # a model's own
    bad = CliRunner().invoke(cli, ["models", "flash-attn", "sometimes"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
