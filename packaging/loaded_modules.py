"""Print, as JSON, the modules medexam's dense retrieval loads: the MiniLM model embedding
two passages through sentence-transformers, transformers and torch.

The spec keeps the Python sources of torch and transformers (which PyInstaller copies beside
their compiled modules, for TorchScript and docstring tools that read source) only for these
modules; every module stays importable from the app's archive.
"""

from __future__ import annotations

import json
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from engine.text.embedder import embed

    embed(["effets indésirables de la warfarine", "mécanisme d'action de la metformine"])
    json.dump(sorted(sys.modules), sys.stdout)
