"""The FrenchMedMCQA seq2seq reader (the paper's BART row, writing "A + D + E"): a tiny,
randomly initialised BART made here from a config (a word-level tokenizer over the sample's
words, one layer of 32 dimensions each side; nothing downloaded) learns four questions by
heart through ``medexam train french-seq2seq``, then answers ``medexam french run --reader``
with stored, scored answers; a training stopped after a step resumes to the very weights of
an uninterrupted one; junk it writes is read as no letter, never a failed run; folders it
cannot train are refused in one line."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import french_fixtures
import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.core.progress import Cancel, Progress
from engine.french.dataset import ensure_sample
from engine.french.runner import run_french
from engine.french.seq2seq import read_letters
from engine.store.store import Store
from engine.train import records
from engine.train.artefacts import artefact_dir, find
from engine.train.loop import train

indexes = french_fixtures.indexes
#: Sample questions with four different answers (A + B + C, B, A + C + E, A).
LEARNT = (0, 1, 4, 6)
SPECIAL = ("<pad>", "<s>", "</s>", "<unk>")


def make_tiny_bart(folder: Path) -> Path:
    """A BART of one 32-dimension layer each side, randomly initialised (seeded), with a
    word-level tokenizer of the sample questions' words, saved as a transformers folder."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BartConfig, BartForConditionalGeneration, PreTrainedTokenizerFast

    words: set[str] = set("abcde+()")
    for q in french_fixtures.sample_questions():
        for text in (q["question"], *q["answers"].values()):
            words.update(re.findall(r"\w+|[^\w\s]", text.lower()))
    vocab = {t: i for i, t in enumerate((*SPECIAL, *sorted(words)))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> $B </s>", special_tokens=[("<s>", 1), ("</s>", 2)]
    )
    PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
        unk_token="<unk>", sep_token="</s>", model_input_names=["input_ids", "attention_mask"],
    ).save_pretrained(str(folder))  # fmt: skip
    config = BartConfig(
        vocab_size=len(vocab), d_model=32, encoder_layers=1, decoder_layers=1,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
        decoder_ffn_dim=64, max_position_embeddings=128, dropout=0.0, pad_token_id=0,
        bos_token_id=1, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=2,
    )  # fmt: skip
    torch.manual_seed(0)
    BartForConditionalGeneration(config).save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def tiny_bart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_bart(tmp_path_factory.mktemp("seq2seq") / "tiny-bart")


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """A model this small trains 20 times faster on one thread than on two on a loaded
    machine (its steps are too small to share)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def invoke(db_path: str, *args: str):
    return CliRunner().invoke(cli, ["--db", db_path, *args])


def one_error_line(result) -> str:
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0]


def learnt_set(db_path: str, tmp_path: Path) -> str:
    """The four sample questions of :data:`LEARNT` imported as the data set ``four``."""
    questions = [french_fixtures.sample_questions()[i] for i in LEARNT]
    path = french_fixtures.write_questions(tmp_path / "four.json", questions)
    done = invoke(db_path, "import", "frenchmedmcqa", str(path), "--name", "four")
    assert done.exit_code == 0, done.output
    return "four"


def test_seq2seq_reads_letters_out_of_what_it_writes() -> None:
    item = french_fixtures.sample_questions()[0]
    assert read_letters("a + b + c", item) == (["a", "b", "c"], "letters")
    assert read_letters("C + A + A", item) == (["a", "c"], "letters")
    assert read_letters("d + + la la", item) == (["d"], "letters")
    assert read_letters("l'antidote est la naloxone", item) == (["d"], "option_text")
    assert read_letters("", item) == ([], "nothing")
    assert read_letters("+ + ( )", item) == ([], "nothing")


def test_bart_reader_learns_four_questions_and_answers_a_french_run(
    db_path: str, home: Path, tmp_path: Path, tiny_bart: Path
) -> None:
    dataset = learnt_set(db_path, tmp_path)
    trained = invoke(
        db_path, "train", "french-seq2seq", "--dataset", dataset, "--dev", dataset,
        "--base", str(tiny_bart), "--epochs", "40", "--batch-size", "1", "--lr", "8e-3",
        "--warmup", "0", "--weight-decay", "0", "--max-length", "64",
        "--checkpoint-every", "1000", "--name", "bart-four", "--json",
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    row = json.loads(trained.output)
    assert row["status"] == "finished" and row["kind"] == "french-seq2seq"
    assert row["step"] == row["n_steps"] == 160
    losses = [loss for _, loss in row["loss_curve"]]
    first, last = sum(losses[:4]) / 4, sum(losses[-4:]) / 4
    assert first > 5 and last < first / 10, (first, last)  # learnt by heart
    hamming = [e["hamming"] for e in row["evals"]]
    assert len(hamming) == 40 and max(hamming) > hamming[0]
    best = row["result"]["best"]
    assert best["hamming"] == max(hamming) and best["emr"] == 100
    manifest = find("bart-four", "reader")
    assert manifest["kind"] == "french-seq2seq" and manifest["encoder_label"] == "tiny-bart"
    assert Path(manifest["path"]).parent == home / "trained"
    assert manifest["max_new_tokens"] >= 9  # "A + B + C + D + E" and the end token fit

    ran = invoke(db_path, "french", "run", "--reader", "bart-four", "--dataset", dataset, "--json")
    assert ran.exit_code == 0, ran.output
    summary = json.loads(ran.output)
    assert summary["status"] == "finished" and summary["model"] == "bart-four"
    assert summary["n"] == 4 and summary["emr"] == best["emr"]  # what the dev set saw
    store = Store(db_path)
    assert store.run(summary["run_id"])["settings"]["encoder"] == "tiny-bart"
    answers = store.answers(summary["run_id"])
    assert len(answers) == 4
    for a in answers:
        assert a["extra"]["pred"] and a["chosen"] == " + ".join(a["extra"]["pred"]).upper()
        assert a["response"] and a["completion_tokens"] and "hamming" in a["scores"]
        assert a["extra"]["parsed_from"] == "letters"
    assert [a["chosen"] for a in answers] == [a["gold"] for a in answers]

    shown = invoke(db_path, "train", "evaluate", str(row["id"]), "--dataset", dataset)
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output.strip().splitlines()[-1])["model"] == "bart-four"
    report = invoke(db_path, "report", str(summary["run_id"]), "--format", "md")
    assert "FrenchMedMCQA Table 2 layout" in report.output and "tiny-bart" in report.output


def settings(base: Path) -> dict:
    """Four steps of 5 sample questions, with the best BM25 passage of the sample corpus."""
    return {"base": str(base), "epochs": 2, "batch_size": 5, "limit": 10, "max_length": 48,
            "learning_rate": 1e-2, "checkpoint_every": 1, "seed": 5, "retriever": "bm25",
            "corpus": "french-sample", "dev_fraction": 0.2}  # fmt: skip


def weights(name: str) -> dict:
    from safetensors.torch import load_file

    return load_file(str(artefact_dir(name) / "model.safetensors"))


def test_seq2seq_training_stopped_resumes_to_the_same_weights(
    store: Store, home: Path, indexes: Path, tiny_bart: Path
) -> None:
    ensure_sample(store)
    whole = train(
        store, "french-seq2seq", "frenchmedmcqa-sample", settings(tiny_bart), name="whole"
    )
    assert whole["status"] == "finished" and whole["step"] == whole["n_steps"] == 4
    assert whole["data"]["index"] and whole["data"]["n_train"] == 8
    cancel = Cancel()

    def stop_after_one(p: Progress) -> None:
        if p.done == 1 and "loss" in p.info:
            cancel.set()

    row = train(
        store, "french-seq2seq", "frenchmedmcqa-sample", settings(tiny_bart), name="stopped",
        progress=stop_after_one, cancel=cancel,
    )  # fmt: skip
    assert row["status"] == "cancelled" and row["step"] == 1
    resumed = invoke(str(store.path), "train", "resume", str(row["id"]))
    assert resumed.exit_code == 0, resumed.output
    assert f"training {row['id']} finished" in resumed.output
    assert "is the model" not in resumed.output  # a reader, not a model of the catalog
    again = records.get(store, row["id"])
    assert again["status"] == "finished" and again["loss_curve"] == whole["loss_curve"]
    a, b = weights("whole"), weights("stopped")
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)

    # the passage it was trained with, and what it wrote read as letters or as none
    summary = run_french(store, "frenchmedmcqa-sample", reader="stopped", limit=5)
    assert summary["status"] == "finished" and summary["n"] == 5
    assert summary["settings"]["index"] == whole["data"]["index"]
    for a in store.answers(summary["run_id"]):
        assert a["extra"]["parsed_from"] in ("letters", "option_text", "nothing")
        assert a["scores"]["hamming"] is not None and len(a["extra"]["passages"]) == 1


def test_seq2seq_refuses_folders_it_cannot_train(db_path: str, home: Path, tmp_path: Path) -> None:
    import train_fixtures

    assert invoke(db_path, "french", "sample").exit_code == 0
    base = ("train", "french-seq2seq", "--dataset", "frenchmedmcqa-sample", "--name", "x")
    assert "give --base FOLDER" in one_error_line(invoke(db_path, *base))
    missing = one_error_line(invoke(db_path, *base, "--base", str(tmp_path / "nope")))
    assert "no such folder" in missing
    encoder = train_fixtures.make_tiny_encoder(tmp_path / "bert")
    line = one_error_line(invoke(db_path, *base, "--base", str(encoder)))
    assert f"base {str(encoder)!r}: not an encoder–decoder transformers can load" in line
    from engine.train.records import all_trainings

    assert all_trainings(Store(db_path)) == []  # refused before anything was recorded
