"""How ``scripts/check_gpu.sh`` holds a GPU build to the float32 reference: the distances
between probes, the tolerance taken from what the quantization moves (the CPU build's
distance from the reference), letters that may differ only on near ties, and the questions
named when the GPU build moved further. Probes are built here; the Vulkan run itself is the
script's (not part of this suite)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.exam.metrics import normalise

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_checks.py"


@pytest.fixture(scope="module")
def checks() -> Any:
    spec = importlib.util.spec_from_file_location("gpu_checks", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_checks"] = module
    spec.loader.exec_module(module)
    return module


def exam(*questions: dict[str, float]) -> dict[str, Any]:
    """A probe's ``exam`` from each question's letter log-probabilities."""
    probs = [normalise(q) for q in questions]
    return {
        "n": len(questions),
        "letters": [max(p, key=p.get) for p in probs],
        "probs": probs,
        "logprobs": list(questions),
    }


def shifted(base: dict[str, Any], by: list[dict[str, float]]) -> dict[str, Any]:
    """``base``'s questions with each letter's log-probability moved by ``by``."""
    return exam(
        *(
            {k: v + d.get(k, 0.0) for k, v in q.items()}
            for q, d in zip(base["logprobs"], by, strict=True)
        )
    )


REF = exam(
    {"A": -1.0, "B": -2.0, "C": -3.0, "D": -4.0},
    {"A": -2.5, "B": -1.2, "C": -3.0, "D": -2.0},
    {"A": -1.50, "B": -1.52, "C": -4.0, "D": -4.0},  # a near tie
)


def test_distance_is_the_mean_and_largest_letter_difference(checks: Any) -> None:
    cpu = shifted(REF, [{"A": 0.1}, {"B": -0.2, "D": 0.1}, {}])
    d = checks.distance(REF, cpu)
    assert d.logprob_mean == pytest.approx(0.4 / 12)
    assert d.logprob_max == pytest.approx(0.2)
    assert d.per_question == pytest.approx((0.1 / 4, 0.3 / 4, 0.0))
    assert d.same == 3 and d.n == 3
    pa, pc = REF["probs"][1], cpu["probs"][1]
    assert d.prob_max == pytest.approx(max(abs(pa[k] - pc[k]) for k in pa), abs=1e-12)
    assert checks.distance(REF, REF).logprob_max == 0.0


def test_tolerance_is_the_quantizations_move_times_the_factor(checks: Any) -> None:
    cpu = shifted(REF, [{"A": 0.1}, {"B": -0.2, "D": 0.1}, {"C": 0.05}])
    moved = checks.distance(REF, cpu)
    tol = checks.Tolerance.of(moved, 2.0)
    assert tol.logprob_mean == pytest.approx(2 * moved.logprob_mean)
    assert tol.prob_max == pytest.approx(2 * moved.prob_max)
    assert tol.near_tie == pytest.approx(moved.prob_max)  # a gap the quantization can close
    # a model that is its own reference still leaves the stored values' rounding
    assert checks.Tolerance.of(checks.distance(REF, REF)).logprob_mean == checks.FLOOR


def test_a_gpu_build_as_far_as_the_cpu_build_passes(checks: Any) -> None:
    cpu = shifted(REF, [{"A": 0.1}, {"B": -0.1}, {"A": 0.01}])
    gpu = shifted(REF, [{"A": -0.1}, {"C": 0.1}, {"B": 0.01}])  # other letters, as far
    verdict = checks.judge(cpu, gpu, REF, factor=1.5)
    assert [ok for _, ok, _ in verdict.checks] == [True, True]
    assert not verdict.further and verdict.moved_most == []


def test_a_gpu_build_further_than_the_quantization_fails_and_names_the_question(
    checks: Any,
) -> None:
    cpu = shifted(REF, [{"A": 0.1}, {"B": -0.1}, {}])
    gpu = shifted(REF, [{"A": 0.1}, {"B": -0.1, "C": 0.4, "D": -0.4}, {}])
    verdict = checks.judge(cpu, gpu, REF, factor=1.5)
    names = {name: ok for name, ok, _ in verdict.checks}
    assert names == {"float32's letters": True,
                     "within the quantization's move from float32": False}  # fmt: skip
    assert verdict.further
    assert verdict.moved_most[0].startswith("question 2: from float32 CPU 0.0250, GPU 0.2250")
    assert len(verdict.moved_most) == 1  # only the questions that moved further


def test_a_larger_factor_lets_it_pass(checks: Any) -> None:
    cpu = shifted(REF, [{"A": 0.1}, {"B": -0.1}, {}])
    gpu = shifted(REF, [{"A": 0.15}, {"B": -0.15}, {}])
    assert not all(ok for _, ok, _ in checks.judge(cpu, gpu, REF, factor=1.2).checks)
    assert all(ok for _, ok, _ in checks.judge(cpu, gpu, REF, factor=1.6).checks)


def test_letters_may_differ_from_the_references_only_on_a_near_tie(checks: Any) -> None:
    cpu = shifted(REF, [{"A": 0.1}, {"B": 0.05}, {"A": 0.05}])
    tie = shifted(REF, [{"A": 0.1}, {"B": 0.05}, {"B": 0.04}])  # question 3's tie turns
    verdict = checks.judge(cpu, tie, REF)
    assert verdict.checks[0][1] and "2/3 (1 other: near ties" in verdict.checks[0][2]
    turned = shifted(REF, [{"A": -1.1}, {"B": 0.05}, {"A": 0.01}])  # question 1 is no tie
    assert not checks.judge(cpu, turned, REF).checks[0][1]
    # a gap wider than the quantization's largest probability move is no tie
    assert not checks.judge(shifted(REF, [{}, {}, {"C": 0.001}]), tie, REF).checks[0][1]


def test_probes_of_different_exams_are_refused(checks: Any) -> None:
    with pytest.raises(SystemExit, match="answered 3 and 2 questions"):
        checks.distance(REF, exam(*REF["logprobs"][:2]))


def probe(found: dict[str, Any], device: str = "CPU") -> dict[str, Any]:
    gpu = device != "CPU"
    return {
        "info": {"device": device, "gpu_layers": 30 if gpu else 0, "layers": 30,
                 "gpu_memory": 2**27 if gpu else 0},
        "generation": {"pieces": 12, "finish": "stop", "cancel_finish": "cancelled",
                       "decode_tok_s": 40.0},
        "exam": {**found, "items_s": 1.0},
        "app": f"Layers go to {device}",
    }  # fmt: skip


def test_compare_prints_the_distances_and_fails_past_the_tolerance(
    checks: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    cpu = shifted(REF, [{"A": 0.1}, {"B": -0.1}, {}])
    files = {}
    for name, found in {"cpu": probe(cpu), "ref": probe(REF),
                        "near": probe(shifted(REF, [{"A": -0.1}, {"B": 0.1}, {}]), "Vulkan0"),
                        "far": probe(shifted(REF, [{"A": 0.5}, {"B": -0.5}, {}]), "Vulkan0")}.items():  # fmt: skip
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps(found), encoding="utf-8")
    argv = ["gpu_checks.py", "compare", str(files["cpu"]), str(files["near"]),
            "--reference", str(files["ref"])]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    checks.main()
    out = capsys.readouterr().out
    assert "ok   within the quantization's move from float32: log-prob mean 0.0167" in out
    assert "CPU build from float32 (the quantization): log-prob mean 0.0167" in out
    monkeypatch.setattr(sys, "argv", [*argv[:3], str(files["far"]), *argv[4:], "--json"])
    checks.main()
    found = json.loads(capsys.readouterr().out)
    assert not found["passed"] and found["further"]
    assert found["tolerance"]["logprob_mean"] == pytest.approx(1.5 * 0.2 / 12)
    assert found["distances"]["gpu"]["logprob_mean"] == pytest.approx(1.0 / 12)
    monkeypatch.setattr(sys, "argv", [*argv[:3], str(files["far"]), *argv[4:]])
    with pytest.raises(SystemExit) as ended:
        checks.main()
    assert ended.value.code == 1
    assert "question 1: from float32 CPU 0.0250, GPU 0.1250" in capsys.readouterr().out


def test_a_setting_sets_and_removes_names_of_the_environment(checks: Any) -> None:
    base = {"GGML_VK_DISABLE_F16": "1", "PATH": "/bin"}
    assert checks.SETTINGS["f16 arithmetic"].environment(base) == {"PATH": "/bin"}
    fusion = checks.SETTINGS["no fused ops"].environment(base)
    assert fusion == {**base, "GGML_VK_DISABLE_FUSION": "1"}
    assert checks.SETTINGS["one slot"].options == ("--slots", "1")
