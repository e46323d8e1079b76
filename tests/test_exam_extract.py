"""Finding the answer letter in free text (Chinese, English, French)."""

from __future__ import annotations

import json

import pytest

from engine.exam.extract import (
    argued_letter,
    extract_answer,
    find_answer,
    split_answer_explanation,
)

OPTIONS = ["口服液", "吸入制剂", "贴剂", "喷雾剂", "粉雾剂"]


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("答案：B", "B"),
        ("答案：B.吸入制剂\n解析：吸入制剂为肺部给药。", "B"),
        ("\n\n答案：选项D：喷雾剂", "D"),
        ("正确答案是选项C。", "C"),
        ("本题答案为：E", "E"),
        ("选D", "D"),
        ("故本题选A。", "A"),
        ("该题的正确答案是B。\n\nA选项：……", "B"),
        ("正确选项：D\n\n解析：……", "D"),
        ("答案：Ｃ", "C"),  # full-width letter
        ("选项E：不溶于水的毒物，可用适当溶剂清洗", "E"),
        ("综上所述，选项D错误，为本题答案。", "D"),
        ("因此，本题宜选B。", "B"),
        ("the correct answer is C", "C"),
        ("Answer: (b) because rifampicin induces CYP3A4.", "B"),
        ("I would choose option D.", "D"),
        ("The answer is: Option E: 粉雾剂.", "E"),  # SmolLM2 with the English prompt
        ("The answer to your question is: Option C: 贴剂", "C"),
        ('The answer to the question "Which is not…?" is:\n\nOption E: 粉雾剂.', "E"),
        ("Option A is correct.", "A"),
        ("la bonne réponse est B", "B"),
        ("Réponse : E", "E"),
        ("La réponse correcte est la proposition c.", "C"),
        ("B", "B"),
        ("(C)", "C"),
        ("D. 喷雾剂", "D"),
        ("喷雾剂", "D"),  # the text of an option without its letter
        ("我认为是粉雾剂，因为它用于肺部给药", "E"),
        # an opinion settling on a letter (ChatGPT on ExplainCPE test item 114)
        ("\n\n我认为宜选用的治疗药物是选项C：阿奇霉素。\n\n尿频、尿急…", "C"),
        ("我觉得最合适的剂型应该是B项，因为……", "B"),
        ("我认为本题应选择选项E。", "E"),
        ("我的答案是：D", "D"),
    ],
)
def test_letters_in_many_forms(text, letter):
    assert extract_answer(text, OPTIONS) == letter


@pytest.mark.parametrize(
    "text",
    [
        "",
        "This is a drug used for asthma.",  # the article "a" is no answer
        "维生素A和CYP3A4的关系需要进一步说明。",  # letters inside words
        "综上，选项A、D、E错误，因此该题答案为B和C。",  # several letters: no single answer
        "综上，本题的答案是没有错误的选项。",  # declares that no option is the answer
        "口服液和贴剂都不对。",  # two option texts: ambiguous
        "我认为不是选项A，也不是选项B，需要更多信息。",  # an opinion that rules letters out
        "我认为选项A和选项C都是合理的。",  # two letters
    ],
)
def test_no_letter(text):
    assert extract_answer(text, OPTIONS) is None


def test_declared_answer_wins_over_a_leading_option_discussion():
    text = "选项B：吸入制剂 可以经肺部给药；选项C：贴剂 仅经皮肤给药。因此，本题的正确答案是选项B：吸入制剂。"
    found = find_answer(text, OPTIONS)
    assert (found.letter, found.rule) == ("B", "declared")


def test_explanation_consistency_helpers():
    head, explanation = split_answer_explanation(
        "答案：D.喷雾剂\n解析：喷雾剂可多途径给药。故本题选D。"
    )
    assert head.startswith("答案：D") and explanation.endswith("故本题选D。")
    assert argued_letter(explanation) == "D"
    # Discussing options is no commitment.
    assert argued_letter("因此，选项A的说法是正确的；选项B错误。") is None
    assert argued_letter("Therefore the answer is B.") == "B"


def test_agreement_with_the_published_judgements(shared_data):
    """Extracted letter right ⇔ published judge says 正确, on all seven settings."""
    rows = json.loads((shared_data / "explaincpe" / "chatgpt_test_responses.json").read_text())
    settings = [k[: -len("_response")] for k in rows[0] if k.endswith("_response")]
    assert len(settings) == 7
    agree = total = 0
    for row in rows:
        for s in settings:
            extracted = extract_answer(row[f"{s}_response"], row["options"])
            agree += (extracted == row["answer"]) == (row[f"{s}_judge"] == "正确")
            total += 1
    assert total == 7 * 189
    assert 100 * agree / total >= 99.5, f"agreement {100 * agree / total:.2f}%"


# -- replies that give no answer, and why ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "finish", "reason"),
    [
        # the option list copied back (SmolLM2 on ExplainCPE), whole or cut off
        ("选项A:口服液\n选项B:吸入制剂\n选项C:注射剂\n选项D:喷雾剂\n选项E:粉雾剂", "stop", "echo"),
        ("选项A：口服液\n选项B：吸入", "length", "echo"),
        ("选项C：贴剂\n\n选项D：喷雾剂\n\n选项A：口服液", "stop", "echo"),  # in any order
        ("选项F：注射用胰蛋白酶\n选项G：注射用胰蛋白酶\n选项H：", "length", "echo"),  # made up
        ("A. Oral solution\nB. Inhalation\nC. Patch", "stop", "echo"),
        ("选项A：口服液 选项B：吸入制剂 选项C：贴剂", "stop", "echo"),  # on one line
        ("A、C", "stop", "several"),
        ("A和D都对", "stop", "several"),
        ("答案：B和C", "stop", "several"),
        ("答案：F", "stop", "out_of_range"),
        ("G. 维生素", "stop", "out_of_range"),
        ("本题考查给药途径，不同剂型的起效速度不同，另外", "length", "cut_off"),
        ("口服液和贴剂都不能迅速起效，而", "length", "cut_off"),  # two options' texts, cut
        ("选项A：需长期使用糖皮质激素的慢性疾病\n\n选项", "length", "echo"),  # cut in a marker
        ("选项C：两种药品在动物体内分布\n\n选项D", "length", "echo"),
        ("选项A：需要活化补体。\n选\ufffd", "length", "echo"),  # cut inside a character
        ("选项A：\n\n说明：1. 结构\n\n选项B：\n\n说明：1. 结构", "stop", "echo"),  # A, then B
        ("选项C：贴剂\n\n说明：选项C：贴剂\n\n选项E：粉雾剂\n\n选项F：片剂", "stop", "echo"),
        ("答案是没有正确的选项", "stop", "none_of_them"),
        ("", "stop", "empty"),
        ("A. 口服液\n\nThe correct answer is D. 喷雾剂.", "stop", "several"),  # two answers
        ("The answer is: Option C: 贴剂.\n\nThe answer is: Option D: 喷雾剂.", "stop", "several"),
        ("这道题考查给药途径。", "stop", "no_letter"),
        (
            " A patient comes to you and says the following.\n\nPatient: Doctor,",
            "length",
            "cut_off",
        ),
        ("Which of the following is the most appropriate treatment?\nA.", "length", "cut_off"),
    ],
)
def test_replies_without_an_answer_say_why(text, finish, reason):
    found = find_answer(text, OPTIONS, finish_reason=finish)
    assert (found.letter, found.reason) == (None, reason)


@pytest.mark.parametrize(
    ("text", "finish", "letter"),
    [
        ("选项A：口服液\n选项B：吸入制剂\n选项C：贴剂\n答案：B", "stop", "B"),  # then chooses
        ("选项A：口服液\n选项B：吸入制剂\n因此，本题选B。", "stop", "B"),
        ("答案：C\n解析：贴剂经皮肤给药，作用持久，适用于", "length", "C"),  # chose, then cut
        ("B. 吸入制剂\n解析：\nA. 口服液经胃肠道\nC. 贴剂经皮肤", "stop", "B"),  # options discussed
        ("选项D：喷雾剂\n\n解析：喷雾剂可多途径给药", "length", "D"),
        ("选项C：贴剂\n\n说明：选项C：贴剂\n\n选项E：粉雾", "length", "C"),  # then a note
        ("喷雾剂可多途径给药，而", "length", "D"),  # one option's text, then cut
        ("喷雾剂", "stop", "D"),
        ("苯巴比妥与避孕药合用可引起：\n\nA: 吸入制剂 is a common term", "length", "A"),
        ("A. 口服液\n\nThe correct answer is A. 口服液.", "stop", "A"),  # the same one twice
        ("选项A：错误\n\n选项D：正确\n\n综上所述，选项D正确，为本题答案。", "stop", "D"),
    ],
)
def test_a_stated_answer_counts_after_a_list_or_before_the_cut(text, finish, letter):
    found = find_answer(text, OPTIONS, finish_reason=finish)
    assert (found.letter, found.reason) == (letter, None)


def test_letters_past_five_are_options_of_a_longer_question():
    seven = [*OPTIONS, "片剂", "胶囊"]
    assert find_answer("答案：G", seven, "ABCDEFG").letter == "G"
    assert find_answer("答案：H", seven, "ABCDEFG").reason == "out_of_range"
