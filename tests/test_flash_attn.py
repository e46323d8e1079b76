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
