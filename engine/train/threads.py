"""A CPU training's threads: the cores other programs leave it, read again as it trains.

torch's threads spin a moment while they wait, as llama.cpp's do, so a training given a core
that another program keeps busy (a model of another medexam process, a second training, a
browser) runs at a fraction of its speed. A training on the CPU therefore takes the cores the
others leave, as a model pool does (:mod:`engine.models.cores`): each core's busy time less
this process's and its own model processes' (:func:`~engine.models.cores_load.busy_elsewhere`),
read before the first step and again at most every ``every`` seconds between steps.
``MEDEXAM_SHARE_CORES`` set to ``medexam`` or ``process`` leaves torch's own thread count.

>>> threads = CpuThreads(cores=2)  # reads the load for a moment        # doctest: +SKIP
>>> threads.settle()               # before a step: 1 while a program holds a core  # doctest: +SKIP
1
"""

from __future__ import annotations

import time

from engine.models.cores import counts_load
from engine.models.cores_load import (
    Reading,
    busy_elsewhere,
    cores_held,
    own_family,
    reading,
    thread_share,
)
from engine.models.hardware import physical_cores


class CpuThreads:
    """Sets torch's threads to the cores other programs leave (see the module docstring)."""

    def __init__(self, cores: int | None = None, every: float = 2.0, first: float = 0.5) -> None:
        self.cores = cores or physical_cores()
        self.every = every
        self.enabled = counts_load()
        import torch

        self._before = torch.get_num_threads()
        self._last: Reading | None = None
        if self.enabled:
            self._last = reading(own_family())
            time.sleep(first)  # a first reading of the load spans this long
            self._apply(reading(own_family()))

    def settle(self) -> int:
        """Read the load again if ``every`` seconds went by and set torch's threads to what
        the others leave; the threads in force."""
        import torch

        if self._last is not None:
            now = reading(own_family())
            if now.at - self._last.at >= self.every:
                self._apply(now)
        return torch.get_num_threads()

    def _apply(self, now: Reading) -> None:
        import torch

        assert self._last is not None
        held = cores_held(busy_elsewhere(self._last, now))
        self._last = now
        threads = thread_share(self.cores, working=1, others=0, held=held)
        if threads != torch.get_num_threads():
            torch.set_num_threads(threads)

    def restore(self) -> None:
        """Give torch back the threads it had (the training is over)."""
        import torch

        if torch.get_num_threads() != self._before:
            torch.set_num_threads(self._before)
