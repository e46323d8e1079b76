"""Is my Q4 as good as the Q8 on my exam? The paired equivalence test's verdicts pinned on
constructed paired right/wrong data, its size and power by simulation, and the verdict of
each model in ``runs compare`` and ``compare-models`` with ``--margin`` and
``--reference``."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import norm

from engine.exam.dataset import ensure_sample
from engine.experiments.compare import compare_runs, format_compare
from engine.reports.equivalence import (
    VERDICTS,
    detectable_difference,
    items_to_settle,
    tango_z,
    verdict,
    verdicts,
)
from engine.reports.stats import newcombe_interval
from engine.store.store import Store
from tests.test_compare import invoke, stored_run

# (right in both, in A only, in B only, in neither) → the verdict on B against A at 5 points.
CASES = [
    ((100, 3, 2, 95), "equivalent"),  # 200 items, 5 disagreements, 1 point apart
    ((400, 20, 18, 362), "equivalent"),  # 800 items, 38 disagreements
    ((300, 40, 20, 340), "equivalent"),  # 2.9 points worse and significantly so: inside 5
    ((80, 40, 5, 75), "worse"),  # 17.5 points worse of 200
    ((300, 60, 20, 420), "worse"),  # 5 points worse of 800: not inside ± 5
    ((150, 22, 13, 165), "not equivalent"),  # 2.6 worse of 350, not significant, not inside
    ((300, 20, 60, 420), "not equivalent"),  # B 5 points better
    ((10, 4, 1, 15), "too few items"),  # 30 items, 5 disagreements
    ((45, 10, 10, 35), "too few items"),  # 100 items, alike, 20% disagreements: 686 needed
    ((5, 0, 0, 5), "too few items"),  # never disagreeing on 10 items shows nothing
    ((30, 0, 0, 20), "too few items"),  # nor on 50
    ((50, 0, 0, 20), "equivalent"),  # on 70 it does
]


@pytest.mark.parametrize(("table", "expected"), CASES)
def test_equivalence_verdict_of_constructed_paired_data(table, expected):
    found = verdict(*table, margin=0.05)
    assert found["verdict"] == expected
    n = sum(table)
    assert found["n"] == n and found["discordant"] == pytest.approx((table[1] + table[2]) / n)
    # The verdict is the TOST's: equivalent exactly when both one-sided p are below 5%.
    assert (found["p"] < 0.05) == (expected == "equivalent")


def test_equivalence_verdicts_of_many_tables_at_once_are_each_tables():
    tables = np.array([t for t, _ in CASES]).T
    assert list(verdicts(*tables, margin=0.05)) == [v for _, v in CASES]
    assert set(VERDICTS) == {v for _, v in CASES}
    # A wider margin settles what a narrower could not.
    assert verdict(150, 22, 13, 165, margin=0.08)["verdict"] == "equivalent"


def test_equivalence_score_statistic_is_tangos():
    # Tango's statistic at the restricted maximum-likelihood share, checked against the
    # likelihood maximised numerically.
    from scipy.optimize import minimize_scalar

    for only_a, only_b, n, theta in [(3, 5, 60, 0.05), (9, 2, 100, -0.05), (10, 10, 100, 0.1)]:

        def minus_log_lik(q, b=only_a, c=only_b, m=n, t=theta):
            return -(c * np.log(q + t) + b * np.log(q) + (m - b - c) * np.log(1 - 2 * q - t))

        q = minimize_scalar(minus_log_lik, bounds=(max(0, -theta) + 1e-12, (1 - theta) / 2 - 1e-12),
                            method="bounded", options={"xatol": 1e-12}).x  # fmt: skip
        expected = (only_b - only_a - n * theta) / math.sqrt(n * (2 * q + theta * (1 - theta)))
        assert float(tango_z(only_a, only_b, n, theta)) == pytest.approx(expected, abs=1e-6)


def _tables(rng, n: int, discordant: float, diff: float, draws: int) -> np.ndarray:
    """``draws`` tables of ``n`` items whose runs disagree on a share ``discordant`` and
    whose true difference B − A is ``diff``."""
    only_b, only_a = (discordant + diff) / 2, (discordant - diff) / 2
    rest = 1 - discordant
    return rng.multinomial(n, [0.6 * rest, only_a, only_b, 0.4 * rest], size=draws).T


def test_equivalence_size_at_a_true_difference_equal_to_the_margin():
    # At a true difference of ± the margin, "equivalent" is a false verdict: the test's size.
    # 4,000 draws a point, so a share of 5% has a Monte-Carlo standard error of 0.34 points:
    # each point may read up to 5% + 3 standard errors, their mean 5% + 0.3 points.
    rng = np.random.default_rng(49)
    found = []
    for n in (60, 100, 200, 400, 1000):
        for discordant in (0.052, 0.06, 0.1, 0.2, 0.4, 0.8):  # nearly all one way … many
            for diff in (0.05, -0.05):
                tables = _tables(rng, n, discordant, diff, 4000)
                found.append(float(np.mean(verdicts(*tables, margin=0.05) == "equivalent")))
    assert max(found) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 4000), max(found)
    assert np.mean(found) <= 0.053
    # The shortcut it replaces, Newcombe's 90% interval inside the margin, is far too
    # ready to say "equivalent" where the runs disagree on few items, nearly all one way.
    tables = _tables(rng, 60, 0.052, -0.05, 4000)
    low, high = newcombe_interval(*tables, level=0.90)
    assert np.mean((low > -0.05) & (high < 0.05)) > 0.12
    assert np.mean(verdicts(*tables, margin=0.05) == "equivalent") <= 0.06


def test_equivalence_power_numbers_do_what_they_say():
    rng = np.random.default_rng(7)
    # The detectable difference: McNemar's test at 5% finds it 80% of the time.
    n, discordant = 400, 0.2
    delta = detectable_difference(n, discordant)
    plain = (norm.ppf(0.975) + norm.ppf(0.8)) * math.sqrt(discordant / n)  # without δ²
    assert 0.99 * plain < delta < plain
    _, b, c, _ = _tables(rng, n, discordant, -delta, 4000)
    with np.errstate(invalid="ignore"):
        found = np.mean((b - c) ** 2 / (b + c) > norm.ppf(0.975) ** 2)
    assert found == pytest.approx(0.80, abs=0.03)
    # Connor's formula solved the other way gives back the items.
    z_a, z_b = norm.ppf(0.975), norm.ppf(0.8)
    back = (z_a * math.sqrt(discordant) + z_b * math.sqrt(discordant - delta**2)) ** 2 / delta**2
    assert back == pytest.approx(n)
    # Too few disagreements to detect anything (all 3 one way is not significant).
    assert detectable_difference(100, 0.03) is None and detectable_difference(0, 0.2) is None
    # The items that settle equivalence: with them, models truly alike are shown so 80% of
    # the time.
    needed = items_to_settle(discordant, 0.05)
    assert needed == math.ceil((norm.ppf(0.95) + norm.ppf(0.9)) ** 2 * discordant / 0.05**2)
    tables = _tables(rng, needed, discordant, 0.0, 4000)
    shown = np.mean(verdicts(*tables, margin=0.05) == "equivalent")
    assert shown == pytest.approx(0.80, abs=0.04)
    # Runs that never disagree: the items at which that alone shows equivalence.
    assert items_to_settle(0.0, 0.05) == 52
    assert verdict(30, 0, 0, 22, 0.05)["verdict"] == "equivalent"
    assert verdict(30, 0, 0, 21, 0.05)["verdict"] == "too few items"


def many_items(store: Store, n: int) -> str:
    """A data set of ``n`` exam questions (five options, A right)."""
    options = {k: f"option {k}" for k in "ABCDE"}
    items = [{"id": f"q{i}", "question": f"Question {i}?", "options": options, "answer": "A"}
             for i in range(n)]  # fmt: skip
    store.add_dataset(f"items{n}", "exam", items)
    return f"items{n}"


def paired_runs(
    store: Store, table: tuple[int, int, int, int], names=("q8", "q4")
) -> tuple[int, int]:
    """Runs A and B right and wrong as ``table`` says (both, A only, B only, neither)."""
    both, only_a, only_b, neither = table
    dataset = many_items(store, sum(table))
    a = [True] * both + [True] * only_a + [False] * only_b + [False] * neither
    b = [True] * both + [False] * only_a + [True] * only_b + [False] * neither
    return stored_run(store, dataset, names[0], a), stored_run(store, dataset, names[1], b)


def test_equivalence_verdict_of_each_model_in_a_comparison(store):
    q8, q4 = paired_runs(store, (100, 3, 2, 95))  # q8 103 right of 200, q4 102: q8 the best
    result = compare_runs(store, [q8, q4])
    rows = {r["run_id"]: r for r in result["rows"]}
    assert result["margin"] == 5 and result["reference"] == result["best"] == q8
    assert rows[q4]["verdict"] == "equivalent" and rows[q4]["margin"] == 5
    assert rows[q8]["verdict"] is None and rows[q8]["reference"]
    numbers = rows[q4]["equivalence"]
    assert numbers["disagree"] == pytest.approx(2.5) and numbers["n"] == 200
    assert numbers["needed"] == items_to_settle(0.025, 0.05)
    text = format_compare(result)
    assert "Verdict (± 5)" in text and "equivalent" in text
    assert "not significant is not equivalence" in " ".join(text.split())
    # A margin of one point: these 200 items cannot settle that.
    narrow = compare_runs(store, [q8, q4], margin=1)
    assert next(r for r in narrow["rows"] if r["run_id"] == q4)["verdict"] == "too few items"
    # The reference named: q8 judged against q4, by the model's name or the run's id.
    for name in ("q4", str(q4), f"#{q4}"):
        named = compare_runs(store, [q8, q4], reference=name)
        assert named["reference"] == q4 and named["best"] == q8
        row = next(r for r in named["rows"] if r["run_id"] == q8)
        assert row["verdict"] == "equivalent" and row["paired"]["accuracy"]["vs"] == q4
        assert row["paired"]["accuracy"]["diff"] == pytest.approx(0.5)
    assert f"reference (#{q4})" in " ".join(format_compare(named).split())


def test_equivalence_worse_and_too_few_through_runs_compare_json(db_path):
    store = Store(db_path)
    big, small = paired_runs(store, (80, 40, 5, 75))
    out = invoke(db_path, "runs", "compare", str(big), str(small), "--json")
    assert out.exit_code == 0, out.output
    result = json.loads(out.output[out.output.index("{") :])
    row = next(r for r in result["rows"] if r["run_id"] == small)
    assert (row["verdict"], row["margin"]) == ("worse", 5)
    # 30 items: too few to tell, and the text says how many would settle it.
    few_a, few_b = paired_runs(store, (10, 4, 1, 15), names=("a30", "b30"))
    out = invoke(db_path, "runs", "compare", str(few_a), str(few_b), "--margin", "10")
    assert out.exit_code == 0, out.output
    assert "too few items" in out.output and "Verdict (± 10)" in out.output
    assert f"{items_to_settle(5 / 30, 0.10)} items would settle ± 10" in " ".join(
        out.output.split()
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--reference", "q2"], "no compared run is 'q2': the reference is one of q8"),
        (["--margin", "0"], "--margin"),
        (["--margin", "150"], "--margin"),
    ],
)
def test_equivalence_options_refuse_bad_input_in_one_line(db_path, args, said):
    store = Store(db_path)
    q8, q4 = paired_runs(store, (10, 4, 1, 15))
    out = invoke(db_path, "runs", "compare", str(q8), str(q4), *args)
    assert out.exit_code != 0 and said in out.output
    assert "Traceback" not in out.output


def test_compare_models_takes_margin_and_reference(db_path, scripted_pool, home):
    from engine.exam.dataset import ensure_sample
    from engine.experiments import records
    from engine.experiments.plan import make_plan
    from engine.experiments.run import open_experiment, run_experiment
    from engine.models.scripted import ScriptedModel

    scripts = {"qa": {"backend": "scripted"}, "qb": {"backend": "scripted"}}
    (home / "models.json").write_text(json.dumps(scripts))
    store = Store(db_path)
    dataset = ensure_sample(store)
    pool = scripted_pool(
        ScriptedModel("qa", replies="答案：B"), ScriptedModel("qb", replies="答案：B")
    )
    experiment_id, _ = open_experiment(
        store, make_plan(store, "compare-models", ["qa", "qb"], dataset, limit=12)
    )
    run_experiment(store, experiment_id, pool=pool)
    assert records.get(store, experiment_id)["status"] == "finished"

    out = invoke(db_path, "experiment", "show", str(experiment_id), "--margin", "3",
                 "--reference", "qb", "--json")  # fmt: skip
    assert out.exit_code == 0, out.output
    summary = json.loads(out.output[out.output.index("{") :])["summary"]
    rows = {r["model"]: r for r in summary["rows"]}
    assert summary["margin"] == 3 and rows["qa"]["margin"] == 3
    assert rows["qb"]["reference"] and rows["qa"]["verdict"] in VERDICTS
    # Alike on 12 items: no disagreement, yet too few items to show it within 3 points.
    assert rows["qa"]["verdict"] == "too few items"
    text = invoke(db_path, "experiment", "show", str(experiment_id)).output
    assert "Verdict (± 5)" in text and "too few items" in text


def test_equivalence_note_says_what_each_verdict_means(store):
    """The notes under `runs compare` define every verdict the table can show, by name."""
    dataset = ensure_sample(store)
    runs = [stored_run(store, dataset, m, [True, False, False]) for m in ("a", "b")]
    flat = " ".join(format_compare(compare_runs(store, runs, margin=5.0)).split())
    note = flat[flat.index("Verdict: each model") :]
    for name in VERDICTS:
        assert f" {name}: " in note or f"): {name}: " in note, name
