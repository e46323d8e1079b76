"""A consultation run reports each turn as a step of its progress ("case 2/2, turn 1"), with
the turn in the report, also when several cases run at once: what a live transcript shows.
The patient and solver are scripted models (:mod:`engine.models.scripted`) that take their
time, so the two cases are in flight together."""

from __future__ import annotations

import threading

from engine.consult.cases.agentclinic import convert_record
from engine.consult.cases.cases import save_cases
from engine.core.runs import run
from engine.models.scripted import ScriptedModel


def two_cases(store) -> str:
    records = [
        {
            "Patient_Actor": {"Demographics": "35-year-old woman", "Symptoms": "Double vision"},
            "Correct_Diagnosis": "Myasthenia gravis",
        },
        {
            "Patient_Actor": {"Demographics": "60-year-old man", "Symptoms": "Chest pain"},
            "Correct_Diagnosis": "Myocardial infarction",
        },
    ]
    save_cases(store, "two", [convert_record(r, f"c{i}") for i, r in enumerate(records, 1)])
    return "two"


def test_each_turn_is_a_progress_step_with_two_cases_at_once(store, scripted_pool) -> None:
    seen = []
    threads = set()

    def progress(p) -> None:
        seen.append(p)
        threads.add(threading.get_ident())

    pool = scripted_pool(ScriptedModel("patient", replies="Since Monday.", delay=0.05),
                         ScriptedModel("solver", replies="It is a diagnosis."))  # fmt: skip
    settings = {"doctor": "oracle-direct", "patient_mode": "grounded", "patient": "patient",
                "solver": "solver"}  # fmt: skip
    summary = run(store, "consult", two_cases(store), settings, progress=progress, concurrency=2,
                  pool=pool)  # fmt: skip
    assert summary["status"] == "finished", summary.get("error")
    steps = [p for p in seen if "turn" in p.info]
    for key, place in (("c1", "case 1/2"), ("c2", "case 2/2")):
        mine = [p for p in steps if p.info["case"] == key]
        stored = store.turns(summary["run_id"], key)
        assert [p.info["turn"]["text"] for p in mine] == [t["text"] for t in stored]
        assert mine[0].message == f"{place}, opening"
        assert mine[1].message == f"{place}, turn 1"
        assert all(p.total == 2 and p.info["run_id"] == summary["run_id"] for p in mine)
    assert len(threads) >= 2  # the turns came from the cases' own threads
    assert seen[-1].done == 2 and "item" in seen[-1].info
