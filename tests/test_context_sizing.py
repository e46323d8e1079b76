"""Presets that run as printed: a run whose context is left to the default sizes its model's
context to its longest prompt and reply, within the model's trained context
(:func:`engine.models.load.sized_context`); a setting whose prompts no context of the model
holds is a row of Table 8 that says why, not a failed run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.core.progress import Cancel
from engine.core.runs import run
from engine.exam.dataset import ensure_sample
from engine.exam.figures import table8_report
from engine.exam.prompts import ShotPlan
from engine.exam.runner import ExamSettings, prompt_text, shot_pool, uses_chat
from engine.experiments import records
from engine.experiments.plan import make_plan
from engine.experiments.run import open_experiment, run_experiment
from engine.models.catalog import resolve
from engine.models.load import LoadSettings, sized_context
from engine.models.pool import ModelPool
from engine.models.scripted import ScriptedModel


@pytest.fixture(scope="module")
def four_shot_lengths(tmp_path_factory) -> list[int]:
    """The real tokenizer's counts of smollm2's 4-shot prompts of the sample's questions."""
    from engine.store.store import Store

    store = Store(tmp_path_factory.mktemp("sizing") / "medexam.db")
    dataset = ensure_sample(store)
    exam = ExamSettings(model="smollm2", shots=4)
    items, _, same = shot_pool(store, dataset)
    plan = ShotPlan(items, exam.shots, exam.seed, same_pool=same)
    pool = ModelPool(LoadSettings(n_ctx=512, slots=1), cores=1, machine_wide=False)
    try:
        with pool.lease("smollm2") as model:
            chat = uses_chat(model, exam.template)
            return [
                model.count_tokens(prompt_text(model, q, plan.for_item(q), exam, chat))
                for q in store.items(dataset)
            ]
    finally:
        pool.close()
        store.close()


def test_the_context_holds_the_longest_prompt_and_its_reply(four_shot_lengths):
    lengths = four_shot_lengths
    longest, shortest = max(lengths), min(lengths)
    assert 1500 < shortest <= longest < 2500  # four examples of the sample's questions
    trained = resolve("smollm2").context_length
    assert trained == 8192  # SmolLM2's GGUF: llama.context_length
    # the default holds them: it stays
    assert sized_context(lengths, 512, trained) == 4096
    # a smaller floor: the need, rounded up to 256 tokens
    need = longest + 512
    sized = sized_context(lengths, 512, trained, least=1024)
    assert need <= sized < need + 256 and sized % 256 == 0
    # past the trained context: as much as it holds (the longest prompts are skipped)
    assert sized_context(lengths, 512, shortest + 600, least=1024) == shortest + 600
    # not even the shortest: why, in one line
    reason = sized_context(lengths, 512, shortest + 100, least=1024)
    assert reason == (
        f"the shortest prompt takes {shortest} tokens and the reply 512, more than the "
        f"model's trained context of {shortest + 100}"
    )
    assert sized_context([], 512, trained) == 4096


@pytest.mark.slow
def test_a_run_whose_prompts_pass_the_default_context_loads_a_longer_one(store):
    # the sample's first question with eight examples: 3,404 tokens, and a reply of 800
    dataset = ensure_sample(store)
    given = {"model": "smollm2", "shots": 8, "max_tokens": 800, "limit": 1}
    stopped = Cancel()
    stopped.set()  # the models load and the run starts: nothing is asked
    pool = ModelPool(LoadSettings(slots=1), cores=1, machine_wide=False)
    try:
        summary = run(store, "exam", dataset, given, pool=pool, cancel=stopped)
        assert summary["status"] == "cancelled"
        sized = {"n_ctx": 4352, "slots": 1}  # 3,404 + 800, rounded up to 256
        assert [m["load"] for m in pool.status()] == [{"slots": 1}, sized]
        with pool.lease("smollm2", LoadSettings(n_ctx=4352)) as model:
            assert model.info["n_ctx"] == 4352
        assert store.run(summary["run_id"])["settings"]["load"] == sized
        # resumed, it loads as it was stored
        again = run(store, "exam", resume=summary["run_id"], pool=pool, cancel=stopped)
        assert store.run(again["run_id"])["settings"]["load"] == sized
        assert len(pool.status()) == 2
    finally:
        pool.close()


@pytest.fixture
def catalog(home: Path) -> Path:
    (home / "models.json").write_text(json.dumps({"scripted": {"backend": "scripted"}}))
    return home


def _eight_shots_long(text: str) -> int:
    """Tokens of a prompt: more than any context for eight examples and a question."""
    return 100_000 if text.count("问题") > 5 else 50


def test_a_row_whose_prompts_fit_no_context_says_why_in_table_8(store, scripted_pool, catalog):
    dataset = ensure_sample(store)
    plan = make_plan(store, "explaincpe-table8", ["scripted"], dataset, limit=1)
    experiment_id, _ = open_experiment(store, plan)
    model = ScriptedModel("scripted", replies="答案：B", tokens=_eight_shots_long)

    result = run_experiment(store, experiment_id, pool=scripted_pool(model))

    assert result["status"] == "finished" and result["failed"] == []
    found = records.get(store, experiment_id)
    eight = [c for c in found["cells"] if c["coords"]["shots"] == 8]
    assert [c["status"] for c in eight] == [records.NO_ROOM, records.NO_ROOM]
    assert all(c["run_id"] is None and "8-shot skipped for scripted" in c["error"] for c in eight)
    assert {c["status"] for c in found["cells"]} - {records.NO_ROOM} == {"finished"}
    table = table8_report(store, found)["tables"][0]
    rows = {(r[0], r[1]): r for r in table["rows"]}
    assert len(rows) == 8  # every row, those that cannot be played among them
    why = rows[("scripted", "8-shot w/ instruction")]
    assert why[2] == "–" and why[4] is None
    assert why[-1].startswith("does not fit: 8-shot skipped for scripted: even the shortest")
    # played again: the same rows, still no failure
    assert run_experiment(store, experiment_id, pool=scripted_pool(model))["failed"] == []
