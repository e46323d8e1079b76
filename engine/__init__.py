"""medexam engine: every piece of logic behind the CLI and the desktop app.

Nothing under ``engine`` imports Qt. The command line (:mod:`engine.cli`) and the GUI
(``gui``) are thin shells over the functions documented here.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("medexam")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0"

__all__ = ["__version__"]
