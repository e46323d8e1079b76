"""Export the patient's replies of stored consultation runs for a person to label.

Each line of the JSONL written is one reply of the patient (the opening request left out)
with what a reader needs to judge it: the doctor's question, the case's facts (all of them)
and the facts the question asks about (``asked``: the fact selector's matches, what the
patient audit reads strictness against), the model that played the patient and its mode,
the case set and how the reply was made (``source``: model, retry, guard, unknown). The id
is a hash of the run's patient, mode, case, turn and reply, so the same reply exported again
keeps its id; ``half`` (``dev`` or ``held``) is fixed by a hash of the reply's words, so the
same words said twice (a fact read out in two runs) fall in the same half.

    python bench/patient_replies.py RUN [RUN ...] --out replies.jsonl   (MEDEXAM_HOME chooses
    the store; without RUN, every consultation run in it)

The labelled fixture ``tests/data/patient_replies_labelled.jsonl`` was made this way (its
note, ``tests/data/patient_replies_labelled.md``, says how).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.consult.cases.cases import Case  # noqa: E402
from engine.store.store import Store  # noqa: E402


def reply_id(patient: str, mode: str, case_id: str, turn: int, text: str) -> str:
    """A stable id of one reply (12 hex digits)."""
    key = f"{patient}|{mode}|{case_id}|{turn}|{text}"
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:12]


def half(text: str) -> str:
    """The fixed half a reply belongs to, by its words: ``dev`` (the audit's rules are tuned
    on it) or ``held`` (its agreement is measured there)."""
    words = " ".join(text.lower().split())
    return "held" if int(hashlib.sha1(words.encode("utf-8")).hexdigest(), 16) % 2 else "dev"


def run_replies(store: Store, run_id: int) -> list[dict[str, Any]]:
    """The patient's replies of one consultation run, each with its question and case."""
    run = store.run(run_id)
    settings = run.get("settings") or {}
    patient = str(settings.get("patient_model") or settings.get("patient") or "")
    mode = str(settings.get("patient_mode") or "paper")
    cases = {c["id"]: Case.from_dict(c) for c in store.items(str(run["dataset"]))}
    out = []
    questions: dict[tuple[str, int], str] = {}
    for t in store.turns(run_id):
        case_id, turn, extra = str(t["item_key"]), int(t["turn"] or 0), t.get("extra") or {}
        if t["role"] == "doctor":
            questions[(case_id, turn)] = str(t["text"] or "")
            continue
        if t["role"] != "patient" or turn == 0 or case_id not in cases:
            continue
        case, text = cases[case_id], str(t["text"] or "")
        rid = reply_id(patient, mode, case_id, turn, text)
        out.append(
            {
                "id": rid,
                "half": half(text),
                "run": run_id,
                "cases": run["dataset"],
                "case": case_id,
                "language": case.language,
                "patient": patient,
                "mode": mode,
                "doctor": settings.get("doctor"),
                "turn": turn,
                "opening": case.initial_request,
                "facts": [[f.key, f.value] for f in case.facts],
                "asked": [int(m["index"]) for m in extra.get("facts") or []],
                "question": questions.get((case_id, turn), ""),
                "reply": text,
                "source": extra.get("source") or "model",
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="*", type=int, help="Consultation runs (default: all).")
    parser.add_argument("--out", required=True, help="The JSONL file to write.")
    args = parser.parse_args()
    store = Store()
    runs = args.runs or [int(r["id"]) for r in store.runs("consult")]
    rows = [r for run_id in sorted(runs) for r in run_replies(store, run_id)]
    with open(args.out, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(json.dumps({"replies": len(rows), "runs": sorted(runs)}))


if __name__ == "__main__":
    main()
