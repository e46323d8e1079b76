"""Trained artefacts: where they live and how commands find them by name.

Each artefact is a folder ``trained/NAME/`` in the user data folder (never in a source
checkout): the kind's files (a transformers model folder for a reader) and ``manifest.json``
(its kind, what it makes — ``reader``… —, the training that made it, its settings). A
training works in a folder of its own, ``trained/.work/ID-TOKEN/`` (its checkpoints; the
token, drawn when the training starts and stored with it, keeps the trainings of two
databases that share the data folder apart), and publishes the artefact there with one
rename when it finishes, so an artefact is either whole or absent: a folder with a manifest
*is* the registration, and :func:`find` looks it up by name.

>>> [a["name"] for a in list_artefacts(kind="reader")]  # doctest: +SKIP
['minilm-bm25']
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import UserError
from engine.paths import data_dir
from engine.text import jsonio

if TYPE_CHECKING:
    from engine.types import JSONDict

MANIFEST = "manifest.json"


class ArtefactError(UserError, ValueError):
    """No trained artefact of that name (or of another kind), or a name that cannot be one."""


def trained_dir() -> Path:
    """The folder of every trained artefact (``trained/`` in the user data folder)."""
    path = data_dir() / "trained"
    path.mkdir(parents=True, exist_ok=True)
    return path


def check_name(name: str) -> str:
    """``name`` when it can name an artefact's folder, else :class:`ArtefactError`."""
    bad = not name or name.strip() != name or name.startswith(".")
    if bad or any(c in name for c in '/\\:*?"<>|'):
        raise ArtefactError(f"invalid name {name!r} (letters, digits, - and _ make a good one)")
    return name


def catalog_name(base: str, name: str) -> str:
    """The model catalog's name of adapter ``name`` over model ``base``:
    ``smollm2+doctor-ft``."""
    return f"{base}+{name}"


def artefact_dir(name: str) -> Path:
    return trained_dir() / check_name(name)


def new_work_token() -> str:
    """The token of a new training's work folder (stored with the training as ``work``)."""
    import uuid

    return uuid.uuid4().hex


def _work_path(training: JSONDict) -> Path:
    token = (training.get("data") or {}).get("work")
    # trainings recorded before tokens were drawn worked in trained/.work/ID
    name = f"{training['id']}-{check_name(token)}" if token else str(training["id"])
    return trained_dir() / ".work" / name


def work_dir(training: JSONDict) -> Path:
    """Where ``training`` (its row) keeps its checkpoints until it is published."""
    path = _work_path(training)
    path.mkdir(parents=True, exist_ok=True)
    return path


def exists(name: str) -> bool:
    return (artefact_dir(name) / MANIFEST).is_file()


def read_manifest(folder: Path) -> JSONDict:
    """The manifest in ``folder``, read by the one JSON reader (a ValueError says why it
    cannot be one: not JSON, nested too deeply, not an object)."""
    path = folder / MANIFEST
    found = jsonio.parse(path, path.read_text(encoding="utf-8"))
    if not isinstance(found, dict):
        raise jsonio.RecordsError(path, "expected a JSON object")
    return found


def list_artefacts(kind: str | None = None) -> list[JSONDict]:
    """The manifests of every artefact (that make ``kind``, when given), by name, each with
    its ``path``."""
    out = []
    for manifest in sorted(trained_dir().glob(f"*/{MANIFEST}")):
        try:
            found = read_manifest(manifest.parent)
        except (OSError, ValueError):
            continue
        if kind is None or found.get("artefact") == kind:
            out.append({**found, "path": str(manifest.parent)})
    return out


def find(name: str, kind: str | None = None) -> JSONDict:
    """The manifest of artefact ``name`` (with its ``path``); one line naming the artefacts
    there are when it is missing or of another kind."""
    folder = artefact_dir(name)
    try:
        found = {**read_manifest(folder), "path": str(folder)}
    except FileNotFoundError:
        found = None
    except (OSError, ValueError) as exc:
        raise ArtefactError(
            f"trained {kind or 'artefact'} {name!r} cannot be read: {exc}"
        ) from None
    if found is None or (kind is not None and found.get("artefact") != kind):
        known = ", ".join(a["name"] for a in list_artefacts(kind)) or "none yet"
        raise ArtefactError(
            f"no trained {kind or 'artefact'} named {name!r} (trained ones: {known}; "
            "train one with 'medexam train')"
        )
    return found


def publish(built: Path, name: str, manifest: JSONDict, replace: bool = False) -> Path:
    """Write ``manifest`` into ``built`` and move the folder to ``trained/NAME`` (replacing
    an older artefact of that name only with ``replace``); return where it is."""
    target = artefact_dir(name)
    (built / MANIFEST).write_text(
        json.dumps({**manifest, "name": name}, ensure_ascii=False, indent=2), encoding="utf-8"
    )
    old = target.with_name(f".{name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        if not replace:
            raise ArtefactError(f"a trained artefact named {name!r} already exists")
        os.replace(target, old)
    os.replace(built, target)
    shutil.rmtree(old, ignore_errors=True)
    return target


def remove_work(training: JSONDict) -> None:
    shutil.rmtree(_work_path(training), ignore_errors=True)
