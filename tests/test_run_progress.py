"""What the progress line of a run says: the question's id (not a bare number read as a
position), the right answers of a resumed run's earlier sessions counted with this one's,
and a rescore naming the item it scored."""

from __future__ import annotations

from engine.core.progress import Cancel, Progress
from engine.core.scoring import rescore
from engine.exam.cli import _note_right
from engine.exam.dataset import ensure_sample
from engine.exam.runner import run_exam
from engine.exam.settings import ExamSettings
from engine.models.scripted import ScriptedModel


def notes(seen: list[Progress]) -> list[str]:
    note = _note_right()
    return [note(p) for p in seen]


def test_a_resumed_run_counts_the_right_answers_of_its_earlier_sessions(store, scripted_pool):
    pool = scripted_pool(ScriptedModel("scripted", replies="B"))  # gold: B, D, B, B
    dataset = ensure_sample(store)
    cancel, first_seen, then_seen, answered = Cancel(), [], [], []

    def stop_after_two(item, answer) -> None:
        answered.append(item)
        if len(answered) == 2:
            cancel.set()

    first = run_exam(store, dataset, ExamSettings(method="logprob", limit=4), pool=pool,
                     cancel=cancel, progress=first_seen.append, on_answer=stop_after_two)  # fmt: skip
    assert first["status"] == "cancelled" and first["answered"] == 2
    second = run_exam(store, None, resume=first["run_id"], pool=pool, progress=then_seen.append)
    assert second["status"] == "finished" and second["answered"] == 4
    answers = store.answers(first["run_id"])
    assert [a["correct"] for a in answers] == [1, 0, 1, 1]

    last = notes(then_seen)[-1]
    assert last.endswith("3/4 right"), last  # not "2/2": the first session's count too
    key = then_seen[-1].info["item"]
    assert last.startswith(f"id {key} ")  # the question's id, said to be one
    assert notes(first_seen)[-1] == "id sample-02 ✗  1/2 right"


def test_a_rescore_names_the_item_it_scored(store, scripted_pool):
    pool = scripted_pool()
    dataset = ensure_sample(store)
    done = run_exam(store, dataset, ExamSettings(method="logprob", limit=2), pool=pool)
    seen: list[Progress] = []
    rescore(store, done["run_id"], ["exam.letter"], progress=seen.append, force=True)
    keys = [a["item_key"] for a in store.answers(done["run_id"])]
    assert [p.message for p in seen[1:]] == [f"exam.letter: item {k}" for k in keys]
