"""``medexam consult stats --cases NAME``: the consultation paper's Table 1 (its rows as the
paper names them) and Figure 4 (the 20 most frequent fact keys) for a case set."""

from __future__ import annotations

import json
from statistics import mean

from click.testing import CliRunner

from engine.cli import cli
from engine.consult.cases.cases import read_cases, sample_path, validate_case
from engine.consult.cases.stats import base_key, stats, table1, top_keys
from engine.text.rouge import tokenize


def invoke(db: str, *args: str):
    return CliRunner().invoke(cli, ["--db", db, *args])


def test_stats_of_the_sample_cases_print_table_1_and_figure_4(db_path: str) -> None:
    done = invoke(db_path, "consult", "stats")
    assert done.exit_code == 0, done.output
    for row in ("Instances", "Options per question", "Tokens of information",
                "Tokens of request", "Facts per case"):  # fmt: skip
        assert row in done.output
    assert "Figure 4: the 20 most frequent keys" in done.output
    cases = read_cases(sample_path())
    assert done.output.splitlines()[1].split() == ["Instances", str(len(cases))]
    found = json.loads(invoke(db_path, "consult", "stats", "--json").output)
    facts = mean(len(c.facts) for c in cases)
    assert found["cases"] == "cases-sample"
    assert found["table1"]["instances"] == len(cases)
    assert found["table1"]["facts_per_case"] == round(facts, 2)
    assert found["table1"]["request_tokens"] == round(
        mean(len(tokenize(c.initial_request)) for c in cases), 2
    )
    assert len(found["figure4"]) == 20
    assert found["figure4"][0] == {"key": "Age", "cases": len(cases)}
    bars = [line for line in done.output.splitlines() if "█" in line]
    assert len(bars) == 20 and bars[0].split()[0] == "Age"


def test_table_1_counts_options_information_and_keys() -> None:
    six = {"A": "a", "B": "b", "C": "c", "D": "d", "E": "e", "F": "f"}
    converted = validate_case({"id": "1", "facts": [{"key": "Age", "value": "4 years"},
                               {"key": "Vital signs - Pulse", "value": "120/min"},
                               {"key": "Vital signs - Temperature", "value": "39 °C"}],
                               "initial_request": "My son coughs at night.",
                               "task": {"question": "Q?", "options": six, "answer": "F"},
                               "meta": {"information": "A 4-year-old boy coughs. Pulse 120/min."}})  # fmt: skip
    free = validate_case({"id": "2", "facts": [{"key": "Age", "value": "70 years"}],
                          "initial_request": "I am dizzy.", "task": {"diagnosis": "Anaemia"}})  # fmt: skip
    table = table1([converted, free])
    assert table["instances"] == 2
    assert table["options_per_question"] == 6.0  # only the multiple-choice task counts
    assert table["information_tokens"] == (len(tokenize("A 4-year-old boy coughs. Pulse 120/min."))
                                           + len(tokenize("70 years"))) / 2  # fmt: skip
    assert table["facts_per_case"] == 2.0
    assert top_keys([converted, free]) == [("Age", 2), ("Vital signs", 1)]
    assert base_key("History (2)") == "History"
    assert stats([])["table1"]["options_per_question"] is None
