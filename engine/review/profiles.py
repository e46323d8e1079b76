"""Profiles: several people on one installation, each with their own person runs, cards and
statistics. The ``default`` profile always exists, so one person never has to choose.

A person run records its profile in its settings (``settings["profile"]``); runs stored
before profiles existed belong to the default profile.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from engine.store.store import Store, StoreError, now

if TYPE_CHECKING:
    from engine.types import Row

DEFAULT_PROFILE = "default"
NAME = re.compile(r"^[\w][\w .@-]{0,39}$")


class ProfileError(StoreError):
    """An unknown or invalid profile name."""


def profiles(store: Store) -> list[str]:
    """Every profile name, the default one first."""
    names = [r["name"] for r in store.db.query("SELECT name FROM profiles ORDER BY name")]
    return [DEFAULT_PROFILE] + [n for n in names if n != DEFAULT_PROFILE]


def check_name(name: str) -> str:
    """``name`` stripped, or :class:`ProfileError` when it cannot name a profile."""
    name = name.strip()
    if not NAME.match(name):
        raise ProfileError(
            f"{name!r} cannot name a profile (1 to 40 letters, digits, spaces, '.', '@', '-')"
        )
    return name


def add_profile(store: Store, name: str) -> str:
    """Create profile ``name`` (nothing happens when it exists); return the name."""
    name = check_name(name)
    with store.transaction():
        store.db.execute(
            "INSERT OR IGNORE INTO profiles (name, created) VALUES (?, ?)", [name, now()]
        )
    return name


def resolve(store: Store, name: str | None, create: bool = False) -> str:
    """The profile to use: ``name``, or the default one when None. An unknown name is
    created when ``create`` is true and refused otherwise."""
    if name is None or not name.strip():
        return DEFAULT_PROFILE
    name = check_name(name)
    if name in profiles(store):
        return name
    if create:
        return add_profile(store, name)
    raise ProfileError(f"no profile named {name!r} (profiles: {', '.join(profiles(store))})")


def run_profile(run: Row) -> str:
    """The profile of a (person) run."""
    return (run.get("settings") or {}).get("profile") or DEFAULT_PROFILE
