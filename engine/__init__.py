"""medexam engine: every piece of logic behind the CLI and the desktop app.

Nothing under ``engine`` imports Qt. The command line (:mod:`engine.cli`) and the GUI
(``gui``) are thin shells over the functions documented here. Importing a package of
``engine`` imports none of its modules: each public name is loaded on first use.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["__version__"]


@functools.cache
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("medexam")
    except PackageNotFoundError:  # running from a source tree that was not installed
        return "0.0.0"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        return _version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
