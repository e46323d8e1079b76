"""The load of the cores: how many CPUs programs other than medexam's models keep busy, and
the threads a working model gets (:mod:`engine.models.cores`).

>>> before = Reading(at=0.0, busy=100.0, ours={42: 5.0})
>>> after = Reading(at=1.0, busy=101.9, ours={42: 5.9})  # model process 42 used 0.9 of it
>>> round(busy_elsewhere(before, after), 2), cores_held(1.0)
(1.0, 1)
>>> thread_share(cores=2, working=1, others=0, held=1)
1
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

HELD = 0.3  # a core other programs keep busy this share of the time is theirs


@dataclass(frozen=True)
class Reading:
    """The CPU time spent busy so far: ``busy`` by the CPUs this process may use (seconds,
    niced programs left out), ``ours`` by each of medexam's model processes, at ``at``
    (``time.monotonic()``)."""

    at: float
    busy: float
    ours: dict[int, float] = field(default_factory=dict)


def reading(ours: Collection[int]) -> Reading:
    """The CPUs' busy time and that of the model processes ``ours`` now."""
    import psutil

    from engine.models.hardware import _allowed_cpus

    allowed = _allowed_cpus()
    per_cpu = psutil.cpu_times(percpu=True)
    busy = sum(_busy(t) for i, t in enumerate(per_cpu) if i in allowed or len(allowed) == 0)
    spent: dict[int, float] = {}
    for pid in ours:
        try:
            process = psutil.Process(pid)
            if process.nice() > 0:
                continue  # its time is niced time, left out of the busy time already
            times = process.cpu_times()
            spent[pid] = times.user + times.system
        except psutil.Error:
            continue
    return Reading(time.monotonic(), busy, spent)


_STARTED_HERE: set[int] = set()  # model processes this process started (any pool's)


def model_started(pid: int) -> None:
    """Model process ``pid`` was started by this process: its busy time is medexam's own,
    whichever pool it works for, from its first moment (:func:`own_family`)."""
    _STARTED_HERE.add(pid)


def own_family() -> set[int]:
    """This process (it feeds its models) and the model processes it started, still living."""
    import psutil

    _STARTED_HERE.intersection_update({p for p in _STARTED_HERE if psutil.pid_exists(p)})
    return {os.getpid(), *_STARTED_HERE}


def _busy(times: Any) -> float:
    """Busy seconds of one CPU: all but idle, waiting on disks, niced programs, and guests
    (already in ``user`` on Linux)."""
    spare = ("idle", "iowait", "nice", "guest", "guest_nice")
    return sum(times) - sum(getattr(times, name, 0.0) for name in spare)


def busy_elsewhere(before: Reading, after: Reading) -> float:
    """How many CPUs other programs kept busy between two readings: the CPUs' busy time
    less that of medexam's model processes read both times, per second."""
    span = after.at - before.at
    if span <= 0:
        return 0.0
    ours = sum(max(0.0, after.ours[p] - before.ours[p]) for p in after.ours.keys() & before.ours)
    return max(0.0, (after.busy - before.busy - ours) / span)


def cores_held(busy: float) -> int:
    """Cores other programs hold when they keep ``busy`` CPUs busy: each one they keep busy
    ``HELD`` of the time or more."""
    return max(0, math.floor(busy + 1 - HELD))


def thread_share(cores: int, working: int, others: int, held: int) -> int:
    """Threads of each of ``working`` models: an equal share, with the ``others`` working in
    other medexam processes, of the ``cores`` less those other programs hold; one at least."""
    return max(1, (cores - held) // max(1, working + others))
