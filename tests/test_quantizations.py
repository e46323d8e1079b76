"""The quantization ladder of the embedded smollm2 (``medexam models quantize``) and the
``quantizations`` preset, played for real on a few sample questions by the letter
probabilities; the KL divergence pinned on constructed distributions."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.exam.metrics import letter_kl
from engine.exam.quantizations import figure_paths, kl_cell, ladder_chart, quantization_summary
from engine.models import catalog
from engine.models.quantize import QuantizeError, ladder, quantize_model

LIMIT = 4


@pytest.fixture(scope="module")
def ladder_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A user data folder of its own holding smollm2's ladder: F32 (made first, the
    reference), Q8_0 and Q2_K."""
    home = tmp_path_factory.mktemp("ladder-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MEDEXAM_HOME", str(home))
        quantize_model("smollm2", ["Q8_0", "q2_k"], threads=1)
        yield home


def test_the_ladder_is_registered_with_its_types_and_kept_when_asked_again(ladder_home):
    assert catalog.quantizations("smollm2") == {
        "smollm2-f32": "F32", "smollm2-q8_0": "Q8_0", "smollm2-q2_k": "Q2_K"
    }  # fmt: skip
    listed = {m.name: m for m in catalog.list_models()}
    assert listed["smollm2-q2_k"].quantization == "Q2_K"  # type: ignore[attr-defined]
    assert listed["smollm2-q8_0"].description == "smollm2 quantized to Q8_0 by llama.cpp"
    assert ladder("smollm2") == (("smollm2-f32", "F32"), [("smollm2-q8_0", "Q8_0"),
                                                          ("smollm2-q2_k", "Q2_K")])  # fmt: skip
    sizes = {m.name: m.file_size for m in listed.values()}  # type: ignore[attr-defined]
    assert sizes["smollm2-f32"] > sizes["smollm2-q8_0"] > sizes["smollm2-q2_k"]
    seen = []
    again = quantize_model("smollm2", ["Q2_K"], progress=seen.append)
    assert [(q.name, q.made) for q in again] == [("smollm2-f32", False), ("smollm2-q2_k", False)]
    assert seen[-1].done == seen[-1].total  # told it is done, without writing anything


def test_models_quantize_refuses_an_unknown_type_in_one_line(ladder_home):
    found = CliRunner().invoke(cli, ["models", "quantize", "smollm2", "--types", "Q8_0,Q5"])
    assert found.exit_code == 1
    assert found.output.strip().splitlines() == [
        "Error: unknown quantization type 'Q5'; known: " + ", ".join(
            ["F32", "F16", "BF16", "Q8_0", "Q6_K", "Q5_K_M", "Q5_K_S", "Q5_1", "Q5_0", "Q4_K_M",
             "Q4_K_S", "Q4_1", "Q4_0", "IQ4_NL", "IQ4_XS", "Q3_K_L", "Q3_K_M", "Q3_K_S", "Q2_K"]
        )
    ]  # fmt: skip
    with pytest.raises(QuantizeError, match="gemma3-270m has no quantizations yet"):
        ladder("gemma3-270m")


def test_the_quantizations_preset_gives_verdicts_flips_and_kl_from_real_runs(ladder_home, store):
    from engine.exam.dataset import ensure_sample
    from engine.experiments import records
    from engine.experiments.plan import make_plan
    from engine.experiments.run import open_experiment, run_experiment

    dataset = ensure_sample(store)
    plan = make_plan(store, "quantizations", ["smollm2"], dataset, limit=LIMIT)
    assert [c.cell.settings["model"] for c in plan.cells] == [
        "smollm2-f32", "smollm2-q8_0", "smollm2-q2_k"
    ]  # fmt: skip
    assert all(c.cell.settings["method"] == "logprob" for c in plan.cells)
    experiment_id, _ = open_experiment(store, plan)
    assert run_experiment(store, experiment_id)["status"] == "finished"
    figure = figure_paths(experiment_id)
    assert figure[1].read_bytes().startswith(b"\x89PNG")  # written as it was played
    written = [p.stat().st_mtime_ns for p in figure]

    result, text = quantization_summary(store, records.get(store, experiment_id))

    (found,) = result["ladders"]
    assert found["reference"]["model"] == "smollm2-f32" and found["items"] == LIMIT
    runs = {r["model"]: r for r in [found["reference"], *found["quantizations"]]}
    answers = {m: {a["item_key"]: a for a in store.answers(r["run_id"])} for m, r in runs.items()}
    ref = answers["smollm2-f32"]
    for q in found["quantizations"]:
        mine = answers[q["model"]]
        assert q["verdict"] in ("equivalent", "not equivalent", "worse", "too few items")
        assert q["margin"] == 5.0
        lost = [k for k in ref if ref[k]["correct"] and not mine[k]["correct"]]
        gained = [k for k in ref if mine[k]["correct"] and not ref[k]["correct"]]
        assert [i["item_key"] for i in q["flipped"]["lost"]] == lost
        assert [i["item_key"] for i in q["flipped"]["gained"]] == gained
        assert q["difference"]["diff"] == pytest.approx(100 * (len(gained) - len(lost)) / LIMIT)
        each = [letter_kl(ref[k]["extra"]["logprobs"], mine[k]["extra"]["logprobs"]) for k in ref]
        assert q["kl_divergence"] == pytest.approx(sum(each) / LIMIT) and q["kl_items"] == LIMIT
        assert q["file_size"] == Path(catalog.resolve(q["model"]).location).stat().st_size
        assert q["ram_peak"] > 0 and q["prompt_per_s"] > 0
    kl = {q["type"]: q["kl_divergence"] for q in found["quantizations"]}
    assert 0 < kl["Q8_0"] < kl["Q2_K"]  # the fewer bits, the further from the reference
    assert "Verdict (± 5)" in text and "smollm2-q2_k: lost" in text and "KL (nats)" in text
    assert result["figure"] == [str(p) for p in figure]
    assert result["chart"]["chance"] == 20.0  # one of five options
    assert [p.stat().st_mtime_ns for p in figure] == written  # the summary wrote nothing
    _experiment_show_writes_only_a_missing_figure(store, experiment_id)


def _experiment_show_writes_only_a_missing_figure(store, experiment_id: int) -> None:
    """``experiment show`` reads: it leaves the figure's files as they are, writing one only
    when it is missing; playing the experiment again draws them again."""
    from engine.experiments.run import run_experiment

    svg, png = figure_paths(experiment_id)
    written = [p.stat().st_mtime_ns for p in (svg, png)]

    def show() -> str:
        found = CliRunner().invoke(
            cli, ["--db", str(store.path), "experiment", "show", str(experiment_id)]
        )
        assert found.exit_code == 0, found.output
        return found.output

    assert f"  {png}" in show()
    assert [p.stat().st_mtime_ns for p in (svg, png)] == written
    png.unlink()
    show()
    assert png.read_bytes().startswith(b"\x89PNG") and svg.stat().st_mtime_ns == written[0]
    run_experiment(store, experiment_id)  # played again: drawn again
    assert svg.stat().st_mtime_ns != written[0]


def test_letter_kl_on_constructed_distributions():
    half = {"A": math.log(0.5), "B": math.log(0.5)}
    assert letter_kl(half, half) == 0.0
    # P = (½, ½), Q = (¾, ¼): ½ ln(½ / ¾) + ½ ln(½ / ¼)
    expected = 0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(0.5 / 0.25)
    assert letter_kl(half, {"B": math.log(0.25), "A": math.log(0.75)}) == pytest.approx(expected)
    # renormalised over the letters: log-probabilities shifted alike are the same distribution
    assert letter_kl({"A": -1.0, "B": -3.0}, {"A": -11.0, "B": -13.0}) == pytest.approx(
        0, abs=1e-12
    )
    # not symmetric: KL(Q‖P) differs
    back = letter_kl({"A": math.log(0.75), "B": math.log(0.25)}, half)
    assert back == pytest.approx(0.75 * math.log(1.5) + 0.25 * math.log(0.5))
    assert back != pytest.approx(expected)
    # a letter the other gives almost nothing stays finite (log space, no probability of 0)
    far = letter_kl(half, {"A": 0.0, "B": -1000.0})
    assert far == pytest.approx(0.5 * (math.log(0.5) + 1000) + 0.5 * math.log(0.5), rel=1e-9)
    assert letter_kl(half, {"A": 0.0, "C": 0.0}) is None and letter_kl({}, {}) is None


def test_kl_cell_is_the_mean_over_the_items_both_have_with_its_interval():
    half = {"A": math.log(0.5), "B": math.log(0.5)}
    skew = {"A": math.log(0.75), "B": math.log(0.25)}
    one = letter_kl(half, skew)
    reference = {str(i): half for i in range(12)}
    other = {str(i): (skew if i < 6 else half) for i in range(11)}  # item 11 missing
    cell = kl_cell(reference, other)
    assert cell["n"] == 11 and cell["value"] == pytest.approx(6 * one / 11)
    assert 0 <= cell["low"] < cell["value"] < cell["high"] <= one
    few = kl_cell({"1": half}, {"1": skew})
    assert few["value"] == pytest.approx(one) and few["low"] is None and few["n"] == 1


def test_the_figure_draws_score_and_kl_against_size():
    from engine.reports.charts import chart_figure, chart_svg

    def rung(kind: str, size: int, value: float, kl: float) -> dict:
        return {"model": f"m-{kind}", "type": kind, "file_size": size * 2**20,
                "score": {"value": value, "low": value - 9, "high": value + 9},
                "kl_divergence": kl, "kl_interval": [kl / 2, kl * 2]}  # fmt: skip

    quantized = [rung("Q8_0", 140, 39.0, 0.01), rung("Q2_K", 80, 20.0, 0.4)]
    reference = rung("F32", 500, 40.0, 0.0) | {"kl_interval": None}
    ladders = [{"model": "m", "metric": {"label": "Accuracy"}, "reference": reference,
                "quantizations": quantized, "chance": 20.0}]  # fmt: skip
    chart = ladder_chart(ladders)
    assert [p["name"] for p in chart["series"][0]["points"]] == ["F32", "Q8_0", "Q2_K"]
    drawn = chart_svg(chart)
    assert drawn.startswith("<svg") and "KL divergence (nats)" in drawn and "Q2_K" in drawn
    score, kl = chart_figure(chart).axes
    (chance,) = [line for line in score.get_lines() if line.get_linestyle() == "--"]
    assert list(chance.get_ydata()) == [20.0, 20.0] and chance.get_label() == "chance (20.0%)"
    assert "chance (20.0%)" in [t.get_text() for t in score.get_legend().get_texts()]
    assert not [line for line in kl.get_lines() if line.get_linestyle() == "--"]
    unknown = chart_figure(ladder_chart([ladders[0] | {"chance": None}]))
    assert not [line for line in unknown.axes[0].get_lines() if line.get_linestyle() == "--"]
