"""The examples in the engine's docstrings are true: each module's doctests run as written
(an example that needs a model or a store is marked ``# doctest: +SKIP`` on every line)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MODULES = sorted(
    ".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
    for p in (REPO / "engine").rglob("*.py")
)


@pytest.mark.parametrize("name", MODULES)
def test_the_module_s_examples_are_true(name: str) -> None:
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in doctest.DocTestFinder(exclude_empty=True).find(module, name):
        runner.run(test)
    results = runner.summarize(verbose=False)
    assert results.failed == 0, f"{results.failed} of {name}'s examples are not true"
