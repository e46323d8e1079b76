"""A training base's dequantized weights, kept for the next training of that base.

transformers reads a GGUF base by parsing the file and dequantizing every tensor to fp32
(about 20 s for SmolLM2-135M on 2 cores); reading those fp32 weights back from safetensors
takes a third of a second. :func:`cached_base` keeps them in ``bases/`` of
:func:`engine.paths.cache_dir`: one folder per GGUF file (by its resolved path), named too for
the file's size, modification time and transformers' version, so a changed file or library is
dequantized again and its older folder removed. A folder is written under a temporary name and
renamed: a process reading never sees half of one, and of two processes writing at once one
keeps its copy. The cache only saves time: a folder that cannot be written (no room, no
permission) is skipped, and one that cannot be read, or whose weights are not all finite
numbers (NaN), is made again from the GGUF file. Only the folders it named itself are ever
removed: another folder in ``bases/`` (a copy kept by hand) is left alone."""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.errors import UserError
from engine.train.finite import non_finite

#: The weights' file in a cached base's folder (its config is ``config.json``).
WEIGHTS = "model.safetensors"


def cached_base(path: Path, load: Callable[[], Any], read: Callable[[Path], Any]) -> Any:
    """The model ``load()`` makes from the GGUF file ``path``, from its cached weights
    (``read(folder)``) when an earlier call kept them, else loaded and kept."""
    folder = _folder(path)
    if folder is not None and (folder / WEIGHTS).is_file():
        try:
            model = read(folder)
        except Exception:  # noqa: BLE001 - damaged (safetensors' own errors too): made again
            model = None
        if model is not None and non_finite(model.state_dict()) is None:
            return model
        shutil.rmtree(folder, ignore_errors=True)  # damaged, or NaN in it: made again
    model = load()
    if folder is not None and non_finite(model.state_dict()) is None:
        _keep(model, folder)
    return model


def _folder(path: Path) -> Path | None:
    """Where the weights of the GGUF file ``path`` are kept; None when the cache folder
    cannot be used."""
    import transformers

    from engine.paths import cache_dir

    real = path.resolve()
    stat = real.stat()
    which = hashlib.sha256(str(real).encode()).hexdigest()[:12]
    version = f"{stat.st_size}:{stat.st_mtime_ns}:{transformers.__version__}"
    try:
        bases = cache_dir() / "bases"
    except UserError:
        return None
    return bases / f"{real.stem}-{which}-{hashlib.sha256(version.encode()).hexdigest()[:12]}"


def _older(folder: Path) -> list[Path]:
    """The folders this cache wrote for the same GGUF file as ``folder`` before it (or
    transformers) changed: named as :func:`_folder` names them, nothing else."""
    same_file = folder.name.rsplit("-", 1)[0]
    ours = re.compile(re.escape(same_file) + r"-[0-9a-f]{12}")
    return [
        p
        for p in folder.parent.glob(glob.escape(same_file) + "-*")
        if ours.fullmatch(p.name) and p.is_dir() and not p.is_symlink()
    ]


def _keep(model: Any, folder: Path) -> None:
    """``model``'s config and weights written to ``folder`` (see the module docstring)."""
    from safetensors.torch import save_model

    size = sum(t.numel() * t.element_size() for t in model.state_dict().values())
    part: Path | None = None
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        if shutil.disk_usage(folder.parent).free < 2 * size:
            return
        part = Path(tempfile.mkdtemp(prefix=".part-", dir=folder.parent))
        model.config.save_pretrained(part)
        save_model(model, str(part / WEIGHTS), metadata={"format": "pt"})
        for old in _older(folder):
            shutil.rmtree(old, ignore_errors=True)  # the same file before it changed
        os.rename(part, folder)
        part = None
    except OSError:
        pass  # no room or no permission, or another process kept its copy first
    finally:
        if part is not None:
            with contextlib.suppress(OSError):
                shutil.rmtree(part)
