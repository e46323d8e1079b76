"""Flash attention for local models: on unless the ``flash_attn`` setting (or a model's own
settings) turn it off; each run stores what its models had."""

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


def test_flash_attention_is_on_unless_set_off() -> None:
    assert ModelSettings().resolved().flash_attn is True
    out = CliRunner().invoke(cli, ["models", "flash-attn", "off"])
    assert out.exit_code == 0 and "flash attention: off" in out.output
    assert ModelSettings().resolved().flash_attn is False
    assert ModelSettings(flash_attn=True).resolved().flash_attn is True  # a model's own
    CliRunner().invoke(cli, ["models", "flash-attn", "on"])
    assert ModelSettings().resolved().flash_attn is True
    bad = CliRunner().invoke(cli, ["models", "flash-attn", "sometimes"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
