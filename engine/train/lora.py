"""A peft LoRA adapter made into a GGUF LoRA that llama.cpp loads beside its base
(``Llama(model_path=BASE, lora_path=ADAPTER)``), with llama.cpp's own converter.

``convert_lora_to_gguf.py`` and what it imports (``convert_hf_to_gguf.py``, ``conversion/``,
``gguf-py/``) come from the llama.cpp sources vendored in the llama-cpp-python sdist:
``scripts/setup.sh`` puts them in ``share/medexam/llama.cpp`` of the environment
(``MEDEXAM_LLAMA_TOOLS`` names another folder). The converter needs the base's
``config.json`` with its ``architectures``; :func:`to_gguf` writes it from the model
transformers loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import UserError

if TYPE_CHECKING:
    import torch

CONVERTER = "convert_lora_to_gguf.py"
#: The adapter's file in a trained doctor's folder.
ADAPTER_FILE = "adapter.gguf"


class ConvertError(UserError, RuntimeError):
    """The converter is missing, or it failed (its last line says why)."""


def tools_dir() -> Path:
    """Where llama.cpp's conversion scripts are."""
    given = os.environ.get("MEDEXAM_LLAMA_TOOLS")
    return Path(given) if given else Path(sys.prefix) / "share" / "medexam" / "llama.cpp"


def converter() -> Path:
    """llama.cpp's ``convert_lora_to_gguf.py``, or one line saying how to get it."""
    path = tools_dir() / CONVERTER
    if not path.is_file():
        raise ConvertError(
            f"llama.cpp's {CONVERTER} is not in {tools_dir()}: run scripts/setup.sh (it puts "
            "the conversion scripts of llama-cpp-python's sources there) or set "
            "MEDEXAM_LLAMA_TOOLS to a llama.cpp checkout"
        )
    return path


def to_gguf(model: torch.nn.Module, folder: Path) -> Path:
    """Save the peft ``model``'s adapter in ``folder`` (``adapter/``, the base's config in
    ``base/``) and convert it to ``folder/adapter.gguf``; return that file."""
    script = converter()
    adapter, base = folder / "adapter", folder / "base"
    with warnings.catch_warnings():  # "no config file beside the GGUF": none is needed
        warnings.simplefilter("ignore")
        model.save_pretrained(str(adapter))
    inner = model.get_base_model()
    config = inner.config.to_dict()
    config.pop("quantization_config", None)  # the GGUF's: the converter reads none
    config["architectures"] = [type(inner).__name__]
    base.mkdir(parents=True, exist_ok=True)
    (base / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
    out = folder / ADAPTER_FILE
    tools = script.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tools / "gguf-py"), str(tools)]),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, str(script), "--base", str(base), "--outfile", str(out),
         "--outtype", "f32", str(adapter)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    if done.returncode != 0 or not out.is_file():
        said = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        raise ConvertError(f"{CONVERTER} failed: {said[-1] if said else done.returncode}")
    return out
