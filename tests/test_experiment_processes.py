"""Two ``experiment run`` processes on one database share its cells: each cell is taken by one
process (in one transaction), the other takes the cells left or waits for them, so every item
is asked once and both end with the experiment finished. Two real processes, a scripted model
(this is about the loop)."""

from __future__ import annotations

from test_runs import scripted_home, start

from engine.exam.dataset import ensure_sample
from engine.experiments import records
from engine.store.store import Store


def test_two_processes_on_one_database_play_each_cell_once(db_path, tmp_path):
    env = scripted_home(tmp_path / "home", slow={"replies": "答案：B", "delay": 0.2})
    store = Store(db_path)
    ensure_sample(store)
    store.close()
    path = tmp_path / "grid.toml"
    path.write_text(
        'activity = "exam"\nmodels = ["slow"]\ndataset = "explaincpe-sample"\nlimit = 3\n'
        "[grid]\nshots = [0, 1, 4]\n"
    )
    args = ["experiment", "run", str(path), "--concurrency", "1"]

    both = [start(db_path, *args, env=env) for _ in range(2)]
    ended = [p.communicate(timeout=300) for p in both]

    for proc, (_out, err) in zip(both, ended, strict=True):
        assert proc.returncode == 0 and "Traceback" not in err, err
    store = Store(db_path)
    try:
        runs = store.runs()
        answers = [len(store.answers(r["id"])) for r in runs]
        shown = records.all_experiments(store)
    finally:
        store.close()
    assert len(runs) == 3 and answers == [3, 3, 3]  # 9 answers for 9 items, no run twice
    assert len(shown) == 1 and shown[0]["status"] == "finished"
    assert sorted(c["run_id"] for c in shown[0]["cells"]) == sorted(r["id"] for r in runs)
