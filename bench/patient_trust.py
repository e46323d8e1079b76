"""How often the grounded patient contradicts its case, with its reply check off and on.

On the first AgentClinic MedQA cases, with an embedded model as the patient, scripted
questions are put to the grounded patient (:class:`engine.consult.patient.simulated.Patient`): the
oracle's question for each key of the case ("Can you tell me about demographics?"), then
two-part questions ("How old are you and when did the double vision start?", "Do you smoke
and do you take any medications?", two keys' questions joined by "and"). Each reply shown is
checked against every fact of its case with :func:`engine.consult.patient.contradict.contradictions`
(sex, age, durations, measurements, negations) and with the patient audit's word overlap
(statements matching no fact). The patient plays twice: as it was (``check_facts`` off: the
older guard only, a question taken whole) and with the check (on). Replies are greedy, so a
model reply both patients ask for is generated once and reused.

The last line printed is JSON: per patient, the replies, contradictions per 100 replies, the
statements matching no fact, how the replies were made, and for the two-part questions the
share of replies that state two facts of the case or more.

    python bench/patient_trust.py [--cases FILE] [--limit 10] [--keys 8] [--model smollm2]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.consult.cases.agentclinic import read_agentclinic  # noqa: E402
from engine.consult.cases.cases import Case  # noqa: E402
from engine.consult.doctor.doctors import OracleDoctor  # noqa: E402
from engine.consult.patient.contradict import contradictions  # noqa: E402
from engine.consult.patient.simulated import Patient  # noqa: E402
from engine.consult.scoring.audit import audit  # noqa: E402
from engine.consult.scoring.metrics import revealed  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "agentclinic"


class Remembered:
    """A chat model whose replies are kept by request: a greedy reply asked for twice (by
    the patient without the check and with it) is generated once."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.kept: dict[str, Any] = {}
        self.calls = 0

    def chat(self, messages: list[dict[str, str]], **options: Any) -> Any:
        key = json.dumps([messages, sorted(options.items())])
        if key not in self.kept:
            self.calls += 1
            self.kept[key] = self.model.chat(messages, **options)
        return self.kept[key]


def questions(case: Case, keys: int) -> tuple[list[str], list[str]]:
    """The oracle's question for each of the first ``keys`` keys, and the two-part ones."""
    oracle = OracleDoctor().questions(case)
    primary = next((f.value for f in case.facts if "primary symptom" in f.key.lower()), "")
    symptom = primary.strip().rstrip(".").lower() or "problem"
    two = [
        f"How old are you and when did the {symptom} start?",
        "Do you smoke and do you take any medications?",
    ]
    if len(oracle) >= 4:
        two.append(f"{oracle[2].rstrip('?')} and {oracle[3][:1].lower()}{oracle[3][1:]}")
    return oracle[:keys], two


def facts_stated(text: str, case: Case) -> int:
    return sum(revealed(text, f, case.language) for f in case.facts)


def play(case: Case, model: Any, check: bool, keys: int) -> dict[str, Any]:
    """Every scripted question put to one patient of ``case``: counts of its replies."""
    patient = Patient(case, model, check_facts=check)
    single, double = questions(case, keys)
    out: dict[str, Any] = {"replies": 0, "contradicting": 0, "two_part": 0, "two_facts": 0}
    sources: dict[str, int] = {}
    turns = []
    examples = []
    for n, question in enumerate(single + double, 1):
        reply = patient.reply(question)
        sources[reply.source] = sources.get(reply.source, 0) + 1
        if reply.source == "unknown":
            continue
        out["replies"] += 1
        out.setdefault("said", []).append({"case": case.id, "check": check, "question": question,
                                           "reply": reply.text, "source": reply.source})  # fmt: skip
        found = contradictions(reply.text, case.facts, case.language, question)
        if found:
            out["contradicting"] += 1
            examples.append({"case": case.id, "question": question, "reply": reply.text,
                             "against": f"{found[0].key}: {found[0].value}"})  # fmt: skip
        if question in double:
            out["two_part"] += 1
            out["two_facts"] += facts_stated(reply.text, case) >= 2
        turns += [
            {"role": "doctor", "turn": n, "text": question, "extra": {"kind": "question"}},
            {"role": "patient", "turn": n, "text": reply.text, "extra": {"kind": "reply"}},
        ]
    checked = audit(case, turns)
    out["statements"] = checked["patient_statements"]
    out["unsupported"] = round(
        (checked["patient_unsupported"] or 0) * checked["patient_statements"]
    )
    return {**out, "sources": sources, "examples": examples}


def total(rows: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("replies", "contradicting", "two_part", "two_facts", "statements", "unsupported")
    out: dict[str, Any] = {k: sum(r[k] for r in rows) for k in keys}
    sources: dict[str, int] = {}
    for r in rows:
        for k, n in r["sources"].items():
            sources[k] = sources.get(k, 0) + n
    replies = out["replies"] or 1
    out["contradictions_per_100"] = round(100 * out["contradicting"] / replies, 1)
    out["unsupported_pct"] = round(100 * out["unsupported"] / (out["statements"] or 1), 1)
    out["two_facts_pct"] = round(100 * out["two_facts"] / (out["two_part"] or 1), 1)
    out["sources"] = sources
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=str(DATA / "agentclinic_medqa.jsonl"))
    parser.add_argument("--limit", type=int, default=10, help="The first N cases.")
    parser.add_argument("--keys", type=int, default=8, help="Key questions per case.")
    parser.add_argument("--model", default="smollm2", help="The patient model.")
    parser.add_argument("--replies", help="Write every question and reply here (JSON Lines).")
    args = parser.parse_args()
    if not Path(args.cases).is_file():
        sys.exit(f"Error: no AgentClinic file at {args.cases}")
    from engine.models.pool import default_pool

    cases = read_agentclinic(args.cases)[: args.limit]
    started = time.perf_counter()
    with default_pool().lease(args.model) as leased:
        model = Remembered(leased)
        played: dict[str, list[dict[str, Any]]] = {}
        for label, check in (("before", False), ("after", True)):
            played[label] = []
            for n, case in enumerate(cases, 1):
                played[label].append(play(case, model, check, args.keys))
                print(f"{label}: case {n} of {len(cases)} ({model.calls} model calls, "
                      f"{time.perf_counter() - started:.0f} s)", file=sys.stderr)  # fmt: skip
    result: dict[str, Any] = {
        "cases": len(cases),
        "model": args.model,
        "keys_per_case": args.keys,
        "model_calls": model.calls,
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.replies:
        with open(args.replies, "w", encoding="utf-8") as out:
            for rows in played.values():
                for r in rows:
                    out.writelines(
                        json.dumps(x, ensure_ascii=False) + "\n" for x in r.get("said", [])
                    )
    for label, rows in played.items():
        result[label] = total(rows)
        result[label]["examples"] = [e for r in rows for e in r["examples"]][:3]
        t = result[label]
        print(
            f"{label:<7} replies {t['replies']:>4}  contradicting {t['contradicting']:>3} "
            f"({t['contradictions_per_100']:.1f} per 100)  statements matching no fact "
            f"{t['unsupported_pct']:.1f}%  two-part with 2+ facts {t['two_facts_pct']:.1f}%  "
            f"sources {t['sources']}"
        )
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
