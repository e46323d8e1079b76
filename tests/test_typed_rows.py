"""The store's rows are typed: each read method gives the keys its typed dict in
engine.types names, no more and no fewer, with the JSON columns decoded."""

from __future__ import annotations

from engine.core.scoring import Scored
from engine.types import AnswerRow, DatasetRow, RatedRow, RunRow, ScoreRow


def keys(typed: type) -> set[str]:
    return set(typed.__required_keys__)  # type: ignore[attr-defined]


def test_every_row_the_store_reads_has_its_typed_keys(store):
    store.add_dataset("demo", "exam", [{"id": "q1", "question": "…"}], meta={"lang": "en"})
    run_id = store.start_run("exam", "demo", "scripted", {"shots": 0})
    right = [Scored("exam.letter", 1, {"correct": True})]
    store.add_answer(run_id, "q1", response="B", chosen="B", gold="B", scores=right)
    store.add_scores(run_id, "q1", [Scored("exam.letter@ann", 1, {"correct": False})])
    store.finish_run(run_id, {"accuracy": 100.0})

    dataset, run, answer = store.dataset("demo"), store.run(run_id), store.answers(run_id)[0]
    assert set(dataset) == keys(DatasetRow) and dataset["meta"] == {"lang": "en"}
    assert set(store.datasets()[0]) == keys(DatasetRow)
    assert set(run) == keys(RunRow) and run["settings"] == {"shots": 0}
    assert set(store.runs()[0]) == keys(RunRow) and run["summary"] == {"accuracy": 100.0}
    assert set(answer) == keys(AnswerRow)
    assert answer["scores"] == {} and answer["correct"] == 1
    assert [set(r) for r in store.score_rows(run_id)] == [keys(ScoreRow)] * 2
    assert [set(r) for r in store.rated_rows([run_id])] == [keys(RatedRow)]
