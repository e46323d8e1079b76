"""Which process owns a run, and whether it is still alive.

A run stores its owner's process id, host name and start time. The start time (from psutil,
on every platform) tells a live owner from an unrelated process that later got the same id.
A process on another host cannot be checked at all: its liveness is unknown (``None``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Any, TypedDict


class Owner(TypedDict):
    """The ``owner_*`` columns of a run: process id, host name and start time."""

    owner_pid: int
    owner_host: str
    owner_started: float | None


@functools.cache
def host() -> str:
    """This machine's name, as runs record it."""
    import socket

    return socket.gethostname()


#: Start times read twice for one process differ by clock-tick rounding at most.
START_TOLERANCE_S = 1.0


def process_started(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch); None when unknown or gone."""
    import psutil

    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, OSError):
        return None


@functools.cache
def own_start() -> float | None:
    """When this process started."""
    return process_started(os.getpid())


def current_owner() -> Owner:
    """The ``owner_*`` columns naming this process."""
    return {"owner_pid": os.getpid(), "owner_host": host(), "owner_started": own_start()}


def process_alive(pid: int, started: float | None = None) -> bool:
    """Whether process ``pid`` runs, and is the one that started at ``started`` when given."""
    import psutil

    if pid <= 0:
        return False
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        now = proc.create_time()
    except psutil.NoSuchProcess:
        return False
    except (psutil.Error, OSError):
        return True  # there, but not ours to inspect
    return started is None or abs(now - started) <= START_TOLERANCE_S


def owner_alive(run: Mapping[str, Any]) -> bool | None:
    """Whether the process owning ``run`` is alive: True, False, or None for another host.

    A run without a recorded owner (stored before owners were recorded) has none alive.
    """
    pid = run.get("owner_pid")
    if pid is None:
        return False
    if run.get("owner_host") != host():
        return None
    return process_alive(int(pid), run.get("owner_started"))
