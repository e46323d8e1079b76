"""Consultations play as many cases at once as their models take (a local model's slots;
here scripted models that take 4 requests at once): each case's patient and solver turns
interleave with the other cases' on the same models, the answers are stored in case order,
the run records the concurrency and the models' slots, Stop ends every request in flight,
and trials play at once by the same measure."""

from __future__ import annotations

import threading
import time

from engine.consult.cases.agentclinic import convert_record
from engine.consult.cases.cases import save_cases
from engine.core.progress import Cancel
from engine.core.runs import run
from engine.core.trials import run_trials
from engine.models.scripted import ScriptedModel
from engine.store.store import Store

SETTINGS = {"doctor": "oracle-direct", "patient": "patient", "solver": "solver"}


def cases(store, n: int = 8) -> str:
    records = [
        {
            "Patient_Actor": {"Demographics": f"{20 + i}-year-old", "Symptoms": f"Symptom {i}"},
            "Correct_Diagnosis": f"Diagnosis {i}",
        }
        for i in range(n)
    ]
    save_cases(store, "eight", [convert_record(r, f"c{i}") for i, r in enumerate(records)])
    return "eight"


class InFlight:
    """Counts the requests the scripted models are answering at once. With ``gather``, the
    first requests wait (up to 10 s) until that many are in flight, so that a loaded machine
    starting the cases' threads late cannot hide how many the run lets play at once."""

    def __init__(self, seconds: float, gather: int = 0) -> None:
        self.seconds, self.now, self.most = seconds, 0, 0
        self.gather = gather
        self.lock = threading.Condition()

    def delay(self, _request) -> float:  # called as a request starts
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.lock.notify_all()
            self.lock.wait_for(lambda: self.most >= self.gather, timeout=10)
        return self.seconds

    def reply(self, text: str):
        def answer(_request) -> str:  # called once its delay is over
            with self.lock:
                self.now -= 1
            return text

        return answer


def models(flight: InFlight, concurrency: int = 4) -> tuple[ScriptedModel, ScriptedModel]:
    patient = ScriptedModel("patient", replies=flight.reply("Since Monday."), delay=flight.delay,
                            concurrency=concurrency)  # fmt: skip
    solver = ScriptedModel("solver", replies=flight.reply("Diagnosis 1"), delay=flight.delay,
                           concurrency=concurrency)  # fmt: skip
    return patient, solver


def test_cases_play_four_at_once_and_are_stored_in_case_order(store, scripted_pool):
    flight = InFlight(0.05, gather=4)
    pool = scripted_pool(*models(flight))
    summary = run(store, "consult", cases(store), SETTINGS, pool=pool)
    assert summary["status"] == "finished", summary.get("error")
    assert flight.most == 4 and flight.now == 0  # four cases in flight, never more
    answers = store.answers(summary["run_id"])
    assert [a["item_key"] for a in answers] == [f"c{i}" for i in range(8)]
    assert [a["position"] for a in answers] == list(range(8))
    settings = store.run(summary["run_id"])["settings"]
    assert settings["concurrency"] == 4
    assert settings["slots"] == {"patient": 4, "solver": 4}  # for a re-run to match
    for a in answers:  # every case has its own whole dialogue
        turns = store.turns(summary["run_id"], a["item_key"])
        assert turns[0]["turn"] == 0 and [t["turn"] for t in turns] == sorted(
            t["turn"] for t in turns
        )
        assert any(t["role"] == "patient" and t["text"] == "Since Monday." for t in turns)


def test_stop_ends_every_request_in_flight(store, scripted_pool):
    flight = InFlight(30.0)
    patient, solver = models(flight)
    pool = scripted_pool(patient, solver)
    cancel = Cancel()
    threading.Timer(0.5, cancel.set).start()
    started = time.monotonic()
    summary = run(store, "consult", cases(store), SETTINGS, pool=pool, cancel=cancel)
    assert time.monotonic() - started < 5
    assert summary["status"] == "cancelled"
    assert flight.most == 4 and flight.now == 0  # all four cut short, none left waiting
    assert not patient._waiting and not solver._waiting
    assert store.answers(summary["run_id"]) == []
    assert store.run(summary["run_id"])["status"] == "cancelled"


def test_an_in_memory_database_takes_one_case_at_a_time(scripted_pool):
    store = Store(":memory:")
    flight = InFlight(0.0)
    summary = run(store, "consult", cases(store, 3), SETTINGS, pool=scripted_pool(*models(flight)))
    assert summary["status"] == "finished" and summary["answered"] == 3, summary.get("error")
    assert store.run(summary["run_id"])["settings"]["concurrency"] == 1
    store.close()


def test_trials_play_at_once_by_the_models_concurrency(store, scripted_pool):
    flight = InFlight(0.05, gather=4)
    pool = scripted_pool(*models(flight))
    settings = {**SETTINGS, "temperature": 0.7, "limit": 2}
    found = run_trials(store, "consult", cases(store), settings, 2, pool=pool)
    assert [s["status"] for s in found.summaries] == ["finished", "finished"]
    runs = [store.run(r) for r in found.run_ids]
    assert [r["settings"]["trial"] for r in runs] == [1, 2]
    assert [r["settings"]["concurrency"] for r in runs] == [2, 2]  # 4 shared by 2 trials
    assert flight.most == 4
