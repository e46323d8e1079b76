"""The stop rule of a model doctor: a turn with a question goes on, a turn without one ends
the consultation, whatever comes before the question. Doctor outputs as chat models write
them (preambles, tentative remarks, conclusions, mixed), in English, Chinese and French."""

from __future__ import annotations

import pytest

from engine.consult.doctor.doctors import (
    LONG_PROMPT,
    PROMPT_QUESTIONS,
    SHORT_PROMPT,
    complete_sentences,
    conclusion_reason,
    is_question,
)

GOES_ON = None

TABLE = [
    # plain questions
    ("How long have you had the pain?", GOES_ON),
    ("Do you have a fever?", GOES_ON),
    ("Can you describe the pain? Is it sharp or dull?", GOES_ON),
    ("Tell me about any medicines you take.", GOES_ON),
    ("Please describe where exactly it hurts.", GOES_ON),
    ("Any allergies to medications.", GOES_ON),
    # preambles and empathy before the question
    ("I'm sorry to hear that. When did the symptoms start?", GOES_ON),
    ("Thank you for coming in today. Can you tell me more about your headaches?", GOES_ON),
    ("Okay, I understand. Have you noticed any blood in your stool?", GOES_ON),
    (
        "That must be difficult for you. I'd like to know whether anyone in your family has "
        "had similar problems.",
        GOES_ON,
    ),
    # tentative remarks or partial conclusions before a question
    ("Based on what you told me, this could be a migraine. Do you smoke?", GOES_ON),
    ("It sounds like you may have an infection. Have you had a fever?", GOES_ON),
    ("The answer is B. Do you smoke?", GOES_ON),
    (
        "I suspect this is related to your heart. Do you get short of breath when you climb "
        "stairs?",
        GOES_ON,
    ),
    (
        "Your symptoms suggest reflux; I would recommend a test. What do you usually eat in "
        "the evening?",
        GOES_ON,
    ),
    ("You most likely have asthma, but first: do you wheeze at night?", GOES_ON),
    # conclusions and closings without a question
    ("Based on your symptoms, you most likely have reflux.", "conclusion"),
    ("I have enough information. The diagnosis is angina.", "conclusion"),
    (
        "Thank you. I have no more questions. The most likely diagnosis is myasthenia gravis.",
        "conclusion",
    ),
    ("In conclusion, this is a case of acute appendicitis and you need surgery.", "conclusion"),
    ("I would recommend an ECG and a blood test as soon as possible.", "conclusion"),
    ("What you have is a common cold. Rest and drink fluids.", "conclusion"),
    ("Okay.", "no_question"),
    ("Thank you for the information.", "no_question"),
    ("Please rest and drink plenty of water.", "no_question"),
    ("", "empty"),
    # Chinese
    ("您吸烟吗？", GOES_ON),
    ("请问您这种疼痛持续多长时间了", GOES_ON),
    ("我明白了。您有没有发烧", GOES_ON),
    ("根据您说的情况，可能是胃炎。您平时饮食规律吗？", GOES_ON),
    ("请您描述一下疼痛的部位。", GOES_ON),
    ("您最近体重有变化吗。", GOES_ON),
    ("我认为您患有偏头痛。", "conclusion"),
    ("信息足够了，诊断是急性阑尾炎。", "conclusion"),
    ("好的，谢谢您的配合。", "no_question"),
    ("我没有其他问题了。", "conclusion"),
    # French
    ("Je comprends. Depuis quand avez-vous mal ?", GOES_ON),
    ("Pouvez-vous décrire la douleur.", GOES_ON),
    ("J'ai assez d'informations. Le diagnostic est une migraine.", "conclusion"),
]


@pytest.mark.parametrize(("text", "reason"), TABLE)
def test_stop_rule_table(text: str, reason: str | None) -> None:
    assert conclusion_reason(text) == reason


def test_the_table_is_large_and_mixed() -> None:
    chinese = [
        t for t, _r in TABLE if not t.isascii() and any("\u4e00" <= c <= "\u9fff" for c in t)
    ]
    assert len(TABLE) >= 30 and len(chinese) >= 8
    assert sum(r is GOES_ON for _t, r in TABLE) >= 15


def test_question_sentences() -> None:
    assert is_question("Are you taking any medication")
    assert not is_question("What you describe is common.")
    assert not is_question("诊断是偏头痛。")


def test_a_cut_reply_loses_only_its_unfinished_sentence() -> None:
    assert complete_sentences("How old are you? Can you tell me more about your child's") == (
        "How old are you?"
    )
    assert complete_sentences("Can you tell me more about your child's") == (
        "Can you tell me more about your child's"
    )
    assert complete_sentences("Do you smoke?") == "Do you smoke?"


def test_the_prompts_as_the_paper_describes_them() -> None:
    long = LONG_PROMPT.format(questions=PROMPT_QUESTIONS, language="English")
    assert "as many questions as possible, up to 10" in long
    assert "one question at a time" in long
    short = SHORT_PROMPT.format(language="English")
    assert len(short) < len(long) / 2 and "one at a time" in short
