"""Custom blocks: questions chosen by pool, subject and difficulty, a count and a mode, as
question banks build them — and saved under a name, to be taken again.

>>> block = Block("exam", "cpe-test", pool="incorrect", subjects=("药品知识题",), count=20)
>>> keys = choose(store, block, "default")                               # doctest: +SKIP
>>> save_block(store, "default", "weak drugs", block)                    # doctest: +SKIP
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

from engine.bank.difficulty import LEVELS, difficulty
from engine.bank.pools import POOLS, PoolError, pool_keys
from engine.errors import UserError
from engine.review.cards import topics
from engine.store.store import now

if TYPE_CHECKING:
    from engine.store.store import Store
    from engine.types import Item, JSONDict


class BlockError(UserError):
    """A block that cannot be built (no question left, an unknown saved block…)."""


@dataclass(frozen=True)
class Block:
    """What a block is made of. ``subjects``: the item's question types (any of them
    matches: ExplainCPE's ``type1``–``type3``, a French question's number of answers, a data
    set's own tags); ``difficulty``: levels of :mod:`engine.bank.difficulty`; ``count``: at
    most that many, drawn at random (``seed`` fixes the draw); ``minutes``: the whole time of
    a timed block (None: practice, with feedback after each question)."""

    activity: str
    dataset: str
    pool: str = "all"
    subjects: tuple[str, ...] = ()
    difficulty: tuple[str, ...] = ()
    count: int | None = None
    minutes: float | None = None
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.pool not in POOLS:
            raise PoolError(f"unknown pool {self.pool!r} (choose from {', '.join(POOLS)})")
        bad = [d for d in self.difficulty if d not in LEVELS]
        if bad:
            raise BlockError(f"unknown difficulty {bad[0]!r} (choose from {', '.join(LEVELS)})")
        if self.minutes is not None and self.minutes <= 0:
            raise BlockError("a timed block needs a positive number of minutes")
        if self.count is not None and self.count < 1:
            raise BlockError("a block holds at least one question")

    @property
    def mode(self) -> str:
        """``timed`` with a time limit, else ``practice``."""
        return "timed" if self.minutes else "practice"

    def as_dict(self) -> JSONDict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: JSONDict) -> Block:
        known = {f.name for f in fields(cls)}
        given = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known}
        return cls(**given)  # type: ignore[arg-type]


def subjects_of(activity: str, item: Item) -> set[str]:
    """The subjects a question belongs to (its question types' values)."""
    return set(topics(activity, item).values())


def subjects(store: Store, activity: str, dataset: str) -> dict[str, int]:
    """Every subject of a data set with its number of questions, the largest first."""
    found: dict[str, int] = {}
    for item in store.items(dataset):
        for s in subjects_of(activity, item):
            found[s] = found.get(s, 0) + 1
    return dict(sorted(found.items(), key=lambda kv: (-kv[1], kv[0])))


def choose(store: Store, block: Block, profile: str) -> list[str]:
    """The keys of the block's questions for ``profile``, in data set order: the pool's
    questions of the chosen subjects and difficulties, ``count`` of them drawn at random."""
    keys = pool_keys(store, block.activity, block.dataset, profile, block.pool)
    items = store.items_by_key(block.dataset) or {}
    if block.subjects:
        wanted = set(block.subjects)
        keys = [k for k in keys if subjects_of(block.activity, items[k]) & wanted]
    if block.difficulty:
        levels = difficulty(store, block.dataset)
        keys = [k for k in keys if k in levels and levels[k].level in block.difficulty]
    if not keys:
        raise BlockError(f"no question of {block.dataset} is in this block ({describe(block)})")
    if block.count is not None and len(keys) > block.count:
        drawn = set(draw(keys, block.count, block.seed))
        keys = [k for k in keys if k in drawn]
    return keys


#: Seeds of random blocks are drawn below this: a short number to type again (``--seed``).
MAX_SEED = 1_000_000


def new_seed() -> int:
    """A fresh seed for a block drawn at random."""
    return random.SystemRandom().randrange(1, MAX_SEED)


def draw(keys: Sequence[str], count: int | None, seed: int | None) -> list[str]:
    """``count`` of ``keys`` (all of them when None) drawn at random, in the order drawn:
    the same ones in the same order for the same ``seed``."""
    keys = list(keys)
    return random.Random(seed).sample(keys, min(count or len(keys), len(keys)))


def block_items(
    items: Sequence[Item],
    keys: Sequence[str] | None = None,
    limit: int | None = None,
    seed: int | None = None,
) -> tuple[list[Item], JSONDict]:
    """A person's block of ``items`` (those of ``keys``, when given): ``limit`` of them
    drawn at random in a random order with ``seed`` (the same block again for the same
    seed), or without a seed the first ``limit`` in data set order; with the settings that
    store the block on the person's run (``limit``, ``keys``, ``seed``, ``order``), which
    :func:`stored_block` reads back."""
    if keys is not None:
        wanted = {str(k) for k in keys}
        items = [i for i in items if str(i["id"]) in wanted]
    settings: JSONDict = {"limit": limit, "seed": seed}
    if seed is None:
        chosen = list(items)[:limit]
        settings["keys"] = [str(k) for k in keys] if keys is not None else None
        settings["order"] = "file"
    else:
        by_key = {str(i["id"]): i for i in items}
        chosen = [by_key[k] for k in draw(list(by_key), limit, seed)]
        settings["keys"] = [str(i["id"]) for i in chosen]
        settings["order"] = "random"
    return chosen, settings


def _id(item: Any) -> str:
    return str(item["id"])


def stored_block(
    items: Sequence[Item], settings: JSONDict, key: Callable[[Any], str] | None = None
) -> list[Item]:
    """The questions of a person's run, in the order they were asked, from the data set's
    ``items`` and the run's settings (:func:`block_items`'; a question since removed from
    the data set is left out). ``key`` gives an item's key (default: its ``id``)."""
    key = key or _id
    keys = settings.get("keys")
    if settings.get("order") == "random" and isinstance(keys, list):
        by_key = {key(i): i for i in items}
        return [by_key[str(k)] for k in keys if str(k) in by_key]
    if isinstance(keys, list):
        wanted = {str(k) for k in keys}
        items = [i for i in items if key(i) in wanted]
    return list(items)[: settings.get("limit") or None]


def describe(block: Block) -> str:
    """A block in a few words ("incorrect · 药品知识题 · hard · 20 · timed")."""
    parts = [block.pool, *block.subjects, *block.difficulty]
    if block.count:
        parts.append(str(block.count))
    parts.append(f"timed {block.minutes:g} min" if block.minutes else "practice")
    return " · ".join(parts)


def save_block(store: Store, profile: str, name: str, block: Block) -> None:
    """Save ``block`` under ``name`` for ``profile`` (replacing one of that name)."""
    name = name.strip()
    if not name:
        raise BlockError("a saved block needs a name")
    with store.transaction():
        store.db.execute(
            "INSERT INTO blocks (profile, name, spec, created) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (profile, name) DO UPDATE SET spec = excluded.spec",
            [profile, name, json.dumps(block.as_dict(), ensure_ascii=False), now()],
        )


def saved_blocks(store: Store, profile: str) -> dict[str, Block]:
    """A profile's saved blocks by name."""
    rows = store.db.query(
        "SELECT name, spec FROM blocks WHERE profile = ? ORDER BY name", [profile]
    )
    return {r["name"]: Block.from_dict(json.loads(r["spec"])) for r in rows}


def load_block(store: Store, profile: str, name: str) -> Block:
    """The saved block ``name`` (marked as used now)."""
    found = saved_blocks(store, profile)
    if name not in found:
        have = ", ".join(found) or "none"
        raise BlockError(f"no saved block {name!r} for {profile} (saved: {have})")
    with store.transaction():
        store.db.execute(
            "UPDATE blocks SET used = ? WHERE profile = ? AND name = ?", [now(), profile, name]
        )
    return found[name]


def delete_block(store: Store, profile: str, name: str) -> None:
    """Forget the saved block ``name``."""
    with store.transaction():
        store.db.execute("DELETE FROM blocks WHERE profile = ? AND name = ?", [profile, name])
