"""Print, as JSON, the modules medexam's torch paths load: the MiniLM model embedding two
passages (dense retrieval, through sentence-transformers, transformers and torch), then a
French reader trained for two steps on the sample (transformers' sequence classification,
the optimizer and the checkpoints torch saves), in a throw-away data folder.

The spec keeps the Python sources of torch and transformers (which PyInstaller copies beside
their compiled modules, for TorchScript and the configuration modules that read their own
source when imported, as ``torch.save`` does) only for these modules; every module stays
importable from the app's archive.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile

if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from engine.text.embedder import embed

    embed(["effets indésirables de la warfarine", "mécanisme d'action de la metformine"])

    from engine.cli import cli

    # The commands' own output goes to stderr: stdout is the list.
    with tempfile.TemporaryDirectory() as home, contextlib.redirect_stdout(sys.stderr):
        os.environ["MEDEXAM_HOME"] = home
        os.environ.pop("MEDEXAM_DB", None)
        train = "train french-reader --dataset frenchmedmcqa-sample --name modules --epochs 1"
        train += " --max-steps 2 --batch-size 2 --max-length 32 --checkpoint-every 1 --json"
        for command in ["french sample --json", train]:
            try:
                cli(command.split(), standalone_mode=False)
            except SystemExit as exc:
                if exc.code:
                    raise
    json.dump(sorted(sys.modules), sys.stdout)
