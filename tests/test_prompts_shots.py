"""The 4- and 8-shot examples: balanced over the seven kinds of question (``type2``), seeded,
fixed for a run, with no preference for short examples; the kind read from the wording
where the pool has no types."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from engine.exam.prompts import KINDS, ShotPlan, question_kind, select_shots


def _item(n: int, kind: str, long: bool = False) -> dict:
    explanation = ("很长的解析。" * 80) if long else "短解析。"
    return {"id": f"{kind}-{n}", "question": f"问题{n}", "options": list("甲乙丙丁戊"),
            "answer": "A", "explanation": explanation, "type2": kind}  # fmt: skip


# Unequal kinds: 逻辑推理题 most frequent, 数学计算题 and 其他 rare.
SIZES = dict(zip(KINDS, (12, 8, 7, 5, 3, 2, 2), strict=True))
POOL = [_item(n, kind) for kind, size in SIZES.items() for n in range(size)]


def test_eight_shots_hold_all_seven_kinds_and_four_the_four_most_frequent() -> None:
    eight = select_shots(POOL, 8, seed=0)
    kinds = Counter(s["type2"] for s in eight)
    assert set(kinds) == set(KINDS) and kinds["逻辑推理题"] == 2
    four = select_shots(POOL, 4, seed=0)
    assert [s["type2"] for s in four] == ["逻辑推理题", "药品知识题", "情景分析题", "常识题"]


def test_the_choice_is_fixed_by_the_seed_whatever_the_pool_order() -> None:
    ids = [s["id"] for s in select_shots(POOL, 8, seed=5)]
    assert [s["id"] for s in select_shots(list(reversed(POOL)), 8, seed=5)] == ids
    assert [s["id"] for s in select_shots(POOL, 8, seed=6)] != ids
    assert ShotPlan(POOL, 8, seed=5).ids == ids


def test_long_examples_are_chosen_as_often_as_short_ones() -> None:
    # Each kind: one short example and three long ones. Chosen without regard to length,
    # about three in four examples are long.
    pool = [_item(n, kind, long=n > 0) for kind in KINDS for n in range(4)]
    picked = [s for seed in range(40) for s in select_shots(pool, 4, seed=seed)]
    share = sum(len(s["explanation"]) > 100 for s in picked) / len(picked)
    assert 0.6 < share < 0.9


def test_one_shot_is_a_seeded_random_draw() -> None:
    draws = {select_shots(POOL, 1, seed=s)[0]["id"] for s in range(30)}
    assert len(draws) > 10  # not always the first kind's first example
    assert select_shots(POOL, 1, seed=3) == select_shots(POOL, 1, seed=3)


def test_the_kind_is_read_from_the_wording_without_types() -> None:
    case = {
        "question": "患者，男，45岁。新诊断为高血压，首选的治疗药物是",
        "options": list("ABCDE"),
    }
    assert question_kind(case) == "情景分析题"
    sums = {"question": "静脉注射某药100mg，测得浓度5μg/ml，其表观分布容积为",
            "options": ["5L", "2L", "20L", "50L", "20ml"]}  # fmt: skip
    assert question_kind(sums) == "数学计算题"
    assert question_kind({"question": "关于药品质量标准中检查项的说法，错误的是"}) == "常识题"
    assert question_kind({"question": "下列药物中光敏性最强的是"}) == "逻辑推理题"
    assert question_kind({**case, "type2": "其他"}) == "其他"  # a label wins


def test_the_wording_agrees_with_the_test_splits_labels_as_documented(shared_data: Path) -> None:
    path = shared_data / "explaincpe" / "test.json"
    if not path.exists():
        pytest.skip("ExplainCPE's test.json is not in the shared data")
    items = json.loads(path.read_text(encoding="utf-8"))
    guessed = [question_kind({k: v for k, v in i.items() if k != "type2"}) for i in items]
    agree = sum(g == i["type2"] for g, i in zip(guessed, items, strict=True))
    assert (agree, len(items)) == (126, 190)  # the number engine.exam.prompts states
    train = json.loads((shared_data / "explaincpe" / "train.json").read_text(encoding="utf-8"))
    eight = select_shots(train, 8, seed=0)
    assert {question_kind(s) for s in eight} == set(KINDS)
