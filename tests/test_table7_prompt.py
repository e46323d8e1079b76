"""ExplainCPE's prompt as its Appendix A prints it (Tables 6 and 7), and what a completion
model receives: the instruction, the question, five "选项X：" lines, nothing after them."""

from __future__ import annotations

from engine.exam.prompts import PromptSettings, build_prompt
from engine.exam.runner import ExamSettings, run_exam
from engine.models.scripted import ScriptedModel

# The question of the paper's example (option A: chlorpromazine), in both languages.
ZH = {
    "id": "t7",
    "question": "药物的光敏性是指药物被光降解的敏感程度。下列药物中光敏性最强的是",
    "options": ["氯丙嗪", "硝普钠", "维生素B2", "叶酸", "氢化可的松"],
    "answer": "B",
    "explanation": "硝普钠对光极不稳定。",
}
EN = {
    **ZH,
    "question": "The photosensitivity of a drug is how easily light degrades it. Which of "
    "the following drugs is the most photosensitive?",
    "options": [
        "Chlorpromazine",
        "Sodium nitroprusside",
        "Vitamin B2",
        "Folic acid",
        "Hydrocortisone",
    ],  # fmt: skip
}

TABLE7_ZH = (
    "该题为单选题,请你回答下列问题并给出解析。\n"
    "\n"
    "问题：药物的光敏性是指药物被光降解的敏感程度。下列药物中光敏性最强的是\n"
    "选项A：氯丙嗪\n"
    "选项B：硝普钠\n"
    "选项C：维生素B2\n"
    "选项D：叶酸\n"
    "选项E：氢化可的松"
)
TABLE7_EN = (
    "This question is a multiple-choice question, please answer the following questions and "
    "give an explanation.\n"
    "\n"
    "Question: The photosensitivity of a drug is how easily light degrades it. Which of the "
    "following drugs is the most photosensitive?\n"
    "Option A: Chlorpromazine.\n"
    "Option B: Sodium nitroprusside.\n"
    "Option C: Vitamin B2.\n"
    "Option D: Folic acid.\n"
    "Option E: Hydrocortisone."
)


def test_table7_prompt_as_printed() -> None:
    assert build_prompt(ZH, [], PromptSettings(0, True, "zh")) == TABLE7_ZH
    assert build_prompt(EN, [], PromptSettings(0, True, "en")) == TABLE7_EN


def test_appendix_a_zero_shot_is_one_prompt_with_or_without_instruction() -> None:
    for item, lang, printed in ((ZH, "zh", TABLE7_ZH), (EN, "en", TABLE7_EN)):
        assert build_prompt(item, [], PromptSettings(0, False, lang)) == printed
    # The run's settings say what was done: at 0 shots the instruction is there.
    assert ExamSettings(shots=0, instruction=False).instruction is True
    assert ExamSettings(shots=1, instruction=False).instruction is False


def test_a_one_shot_prompt_ends_with_the_question_options() -> None:
    shot = {**ZH, "id": "s1", "answer": "A"}
    prompt = build_prompt(ZH, [shot], PromptSettings(1, False, "zh"))
    assert prompt.startswith("问题：") and prompt.endswith(TABLE7_ZH.split("\n\n")[1])
    assert prompt.count("答案：") == 1  # the example's answer; none after the question


def test_a_completion_model_receives_the_printed_prompt(store, scripted_pool) -> None:
    base = ScriptedModel("base", replies="答案：B.硝普钠\n解析：……", chat_template=False)
    store.add_dataset("t7", "exam", [ZH])
    for instruction in (True, False):
        summary = run_exam(
            store,
            "t7",
            ExamSettings(model="base", shots=0, instruction=instruction),
            pool=scripted_pool(base),
        )
        assert summary["accuracy"] == 100.0
        assert base.requests[-1].kind == "complete"
        assert base.requests[-1].prompt == TABLE7_ZH
    run = store.run(summary["run_id"])
    assert run["settings"]["prompt_version"] == 2 and run["settings"]["instruction"] is True


def test_logprob_adds_the_answer_cue_where_it_reads_the_letter(store, scripted_pool) -> None:
    base = ScriptedModel("base", replies="B", chat_template=False)
    store.add_dataset("t7", "exam", [ZH])
    summary = run_exam(
        store, "t7", ExamSettings(model="base", method="logprob"), pool=scripted_pool(base)
    )
    assert summary["accuracy"] == 100.0
    assert base.requests[-1].kind == "logprobs"
    assert base.requests[-1].prompt == TABLE7_ZH + "\n答案："
