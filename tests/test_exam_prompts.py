"""The paper's prompts: templates, languages, and reproducible, balanced examples."""

from __future__ import annotations

import pytest

from engine.exam.dataset import ensure_sample, load_file, sample_path
from engine.exam.prompts import (
    INSTRUCTION,
    PromptSettings,
    ShotPlan,
    build_messages,
    build_prompt,
    format_answer,
    format_question,
    question_kind,
    select_shots,
)
from engine.exam.runner import shot_pool

ITEMS = load_file(sample_path())


def test_chinese_question_and_answer_format():
    item = ITEMS[0]
    text = format_question(item, "zh")
    assert text.splitlines()[0] == "问题：" + item["question"]
    assert text.splitlines()[1] == "选项A：" + item["options"][0]
    assert text.splitlines()[5] == "选项E：" + item["options"][4]
    answer = format_answer(item, "zh")
    letter = item["answer"]
    assert answer.startswith(f"答案：{letter}.{item['options']['ABCDE'.index(letter)]}\n解析：")


def test_english_template():
    prompt = build_prompt(ITEMS[1], [ITEMS[2]], PromptSettings(1, True, "en"))
    assert prompt.startswith(
        "This question is a multiple-choice question, please answer the following "
        "questions and give an explanation.\n\nQuestion: "
    )
    assert "\nOption B: " in prompt and "\nExplanation: " in prompt
    assert prompt.endswith("Option E: " + ITEMS[1]["options"][4] + ".")


def test_with_and_without_instruction():
    with_i = build_prompt(ITEMS[0], [ITEMS[1]], PromptSettings(1, True, "zh"))
    without = build_prompt(ITEMS[0], [ITEMS[1]], PromptSettings(1, False, "zh"))
    assert with_i.startswith("该题为单选题,请你回答下列问题并给出解析。\n\n问题：")
    assert without.startswith("问题：")
    assert with_i.endswith("\n选项E：" + ITEMS[0]["options"][4])
    assert without.endswith("\n选项E：" + ITEMS[0]["options"][4])
    assert INSTRUCTION["zh"] not in without


def test_shots_are_reproducible_and_balanced():
    four = select_shots(ITEMS, 4, seed=0)
    assert [s["id"] for s in four] == [s["id"] for s in select_shots(ITEMS, 4, seed=0)]
    assert [s["id"] for s in four] != [s["id"] for s in select_shots(ITEMS, 4, seed=1)]
    assert len({question_kind(s) for s in four}) == 4  # four kinds of question, one each
    assert len({s["id"] for s in select_shots(ITEMS, 8, seed=3)}) == 8


def test_a_question_never_sees_itself_as_an_example():
    plan = ShotPlan(ITEMS, 4, seed=0, same_pool=True)
    for item in ITEMS:
        shots = plan.for_item(item)
        assert len(shots) == 4
        assert item["id"] not in [s["id"] for s in shots]
    inside = next(i for i in ITEMS if i["id"] in plan.ids)
    outside = next(i for i in ITEMS if i["id"] not in plan.ids)
    # Only the position of the excluded question changes; the others keep theirs.
    kept = [a["id"] == b["id"] for a, b in zip(plan.for_item(inside), plan.shots, strict=True)]
    assert kept.count(False) == 1
    assert plan.for_item(outside) == plan.shots


def test_chat_messages_alternate_examples():
    messages = build_messages(ITEMS[0], [ITEMS[1], ITEMS[2]], PromptSettings(1, True, "zh"))
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert messages[0]["content"].startswith(INSTRUCTION["zh"] + "\n\n问题：")
    assert messages[1]["content"].startswith("答案：")
    assert messages[-1]["content"] == format_question(ITEMS[0], "zh")


def test_settings_are_checked():
    with pytest.raises(ValueError, match="shots"):
        PromptSettings(shots=3)
    with pytest.raises(ValueError, match="lang"):
        PromptSettings(lang="fr")


def test_examples_come_from_the_train_split_when_imported(store):
    ensure_sample(store)
    items, name, same = shot_pool(store, "explaincpe-sample")
    assert name == "explaincpe-sample" and same
    store.add_dataset("bank-test", "exam", ITEMS[:3])
    store.add_dataset("bank-train", "exam", ITEMS[3:])
    items, name, same = shot_pool(store, "bank-test")
    assert name == "bank-train" and not same and len(items) == len(ITEMS) - 3
