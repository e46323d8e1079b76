"""A doctor fine-tuned on golden dialogues: ``consult golden`` builds them with the real
SmolLM2 as the patient, ``train doctor`` trains a LoRA for a few steps on the GGUF loaded
by transformers, the adapter converted to a GGUF LoRA that llama.cpp loads, and the
fine-tuned doctor (``smollm2+NAME``) runs a consultation; the doctor's loss mask, a long
dialogue rendered once and its preparation stopped by a cancel; a dialogue file recorded by
its absolute path and hash, a changed one refused on resume."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.consult.training.golden import doctor_dialogues
from engine.core.progress import Cancel, Cancelled, Progress
from engine.store.store import Store
from engine.train import records
from engine.train.chat_lora import IGNORE, encode, pieces
from engine.train.loop import TrainError, train


def invoke(db_path: str, *args: str):
    return CliRunner().invoke(cli, ["--db", db_path, *args])


def chatml(messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
    text = "".join(f"<|{m['role']}|>{m['content']}<|end|>" for m in messages)
    return text + ("<|assistant|>" if add_generation_prompt else "")


DIALOGUE = [
    {"role": "system", "content": "Be a doctor."},
    {"role": "user", "content": "My head hurts."},
    {"role": "assistant", "content": "Since when?"},
    {"role": "user", "content": "Two days."},
    {"role": "assistant", "content": "The most likely diagnosis is migraine."},
]


def test_only_the_doctors_turns_are_learned() -> None:
    cut = pieces(chatml, DIALOGUE)
    learned = [text for text, yes in cut if yes]
    assert learned == ["Since when?<|end|>", "The most likely diagnosis is migraine.<|end|>"]
    assert "".join(text for text, _ in cut) == chatml(DIALOGUE, False)

    def tokenize(text: str, first: bool) -> list[int]:  # one token per character
        return ([0] if first else []) + [ord(c) for c in text]

    encoded = encode(chatml, tokenize, DIALOGUE, 10_000)
    assert encoded is not None
    kept = "".join(chr(t) for t, label in zip(encoded["input_ids"], encoded["labels"], strict=True) if label != IGNORE)  # fmt: skip
    assert kept == "".join(learned)
    assert encoded["input_ids"][0] == 0 and encoded["labels"][0] == IGNORE  # BOS, not learned
    # cut before the first doctor turn: nothing left to learn
    assert encode(chatml, tokenize, DIALOGUE, 20) is None


def gemma_like(messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
    """A template that trims each turn and names the assistant "model"."""
    role = {"assistant": "model"}
    text = "".join(
        f"<start_of_turn>{role.get(m['role'], m['role'])}\n{m['content'].strip()}<end_of_turn>\n"
        for m in messages
    )
    return "<bos>" + text + ("<start_of_turn>model\n" if add_generation_prompt else "")


def long_dialogue(turns: int) -> list[dict[str, str]]:
    out = [DIALOGUE[0]]
    for i in range(turns):
        out += [{"role": "user", "content": f"answer {i}"},
                {"role": "assistant", "content": f"question {i}?"}]  # fmt: skip
    return out


def test_a_long_dialogue_is_rendered_once() -> None:
    rendered: list[int] = []

    def counting(messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
        rendered.append(len(messages))
        return chatml(messages, add_generation_prompt)

    dialogue = long_dialogue(1500)
    learned = [text for text, yes in pieces(counting, dialogue) if yes]
    assert len(learned) == 1500 and learned[7] == "question 7?<|end|>"
    assert sum(rendered) < 2 * len(dialogue)  # the whole once and a few short probes
    trimmed = [*DIALOGUE[:-1], {"role": "assistant", "content": "  Migraine.  "}]
    assert [text for text, yes in pieces(gemma_like, trimmed) if yes] == [
        "Since when?<end_of_turn>\n",
        "Migraine.<end_of_turn>\n",
    ]


def test_preparing_a_doctor_stops_when_cancelled(tmp_path: Path, home: Path) -> None:
    cancel = Cancel()
    cancel.set()
    with pytest.raises(Cancelled):
        encode(chatml, lambda text, first: [ord(c) for c in text], long_dialogue(50), 10**6, cancel)
    store = Store(tmp_path / "t.db")
    dialogues = tmp_path / "long.jsonl"
    dialogues.write_text(json.dumps({"messages": long_dialogue(200)}) + "\n", encoding="utf-8")
    with pytest.raises(Cancelled):
        train(store, "doctor", str(dialogues), {"max_steps": 1}, name="doc", cancel=cancel)
    assert records.all_trainings(store) == []  # stopped before anything was recorded


@pytest.mark.slow
def test_a_dialogue_file_is_kept_by_path_and_hash(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "here"
    folder.mkdir()
    monkeypatch.chdir(folder)
    text = "".join(json.dumps({"messages": DIALOGUE}) + "\n" for _ in range(4))
    Path("four.jsonl").write_text(text, encoding="utf-8")
    store = Store(tmp_path / "t.db")
    cancel = Cancel()

    def stop(p: Progress) -> None:
        if p.done == 1 and "loss" in p.info:
            cancel.set()

    settings = {"max_steps": 2, "max_length": 96, "checkpoint_every": 1}
    row = train(store, "doctor", "four.jsonl", settings, name="doc", progress=stop, cancel=cancel)
    assert row["status"] == "cancelled" and row["step"] == 1
    assert row["dataset"] == str(folder.resolve() / "four.jsonl")
    assert row["data"]["source"]["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    monkeypatch.chdir(tmp_path)  # a resume from elsewhere finds the file
    (folder / "four.jsonl").write_text(text.replace("Since when?", "How long?"), encoding="utf-8")
    with pytest.raises(TrainError, match="four.jsonl changed since training 1 started"):
        train(store, "", resume=row["id"])
    assert records.get(store, row["id"])["status"] == "cancelled"
    (folder / "four.jsonl").write_text(text, encoding="utf-8")
    steps: list[int] = []
    resumed = train(store, "", resume=row["id"], progress=lambda p: steps.append(p.done))
    assert resumed["status"] == "finished" and min(s for s in steps if s) == 2


def test_dialogue_files_are_checked(tmp_path: Path) -> None:
    store = Store(":memory:")
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"messages": DIALOGUE}) + "\n", encoding="utf-8")
    assert doctor_dialogues(store, str(good)) == [DIALOGUE]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    with pytest.raises(ValueError, match="line 1: not a chat dialogue"):
        doctor_dialogues(store, str(bad))
    with pytest.raises(ValueError, match="no golden set or dialogue file 'nothing'"):
        doctor_dialogues(store, "nothing")


@pytest.mark.slow
def test_golden_dialogues_train_a_doctor_that_consults(
    db_path: str, home: Path, tmp_path: Path
) -> None:
    made = invoke(db_path, "consult", "golden", "--limit", "1", "--name", "g1", "--json")
    assert made.exit_code == 0, made.output
    summary = json.loads(made.output.strip().splitlines()[-1])
    assert summary["status"] == "finished" and summary["n"] == 1
    again = invoke(db_path, "consult", "golden", "--limit", "1", "--name", "g1")
    assert again.exit_code != 0 and "golden set 'g1' exists" in again.output

    store = Store(db_path)
    dialogues = doctor_dialogues(store, "g1")
    assert len(dialogues) == 1
    for d in dialogues:  # the doctor's prompt of a run, every key asked, the diagnosis last
        assert d[0]["role"] == "system" and "Task:" not in d[0]["content"]
        assert d[1]["role"] == "user"
        assert d[-1]["content"].startswith("Thank you, I have no more questions.")
        assert sum(m["role"] == "assistant" for m in d) > 3
    exported = tmp_path / "golden.jsonl"
    wrote = invoke(db_path, "consult", "export-dialogues", str(summary["run_id"]), "--out", str(exported))  # fmt: skip
    assert wrote.exit_code == 0 and len(exported.read_text().splitlines()) == 1

    trained = invoke(
        db_path, "train", "doctor", "--dialogues", "g1", "--name", "doc", "--max-steps", "2",
        "--max-length", "384", "--json",
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    row = json.loads(trained.output)
    assert row["status"] == "finished" and row["step"] == 2
    assert row["data"]["learned_tokens"] > 0 and row["data"]["trainable"] < 5_000_000
    adapter = Path(row["result"]["path"]) / "adapter.gguf"
    from gguf import GGUFReader

    names = [t.name for t in GGUFReader(str(adapter)).tensors]
    assert names and all(n.endswith((".lora_a", ".lora_b")) for n in names)
    assert not any(n.startswith(("token_embd", "output.")) for n in names)

    listed = invoke(db_path, "models", "list", "--json")
    assert listed.exit_code == 0, listed.output
    assert "smollm2+doc" in {m["name"] for m in json.loads(listed.output)}
    ran = invoke(
        db_path, "consult", "run", "--doctor", "smollm2+doc", "--limit", "1", "--max-turns", "2",
        "--json",
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    run = store.run(json.loads(ran.output.strip().splitlines()[-1])["run_id"])
    assert run["model"] == "smollm2+doc" and run["status"] == "finished"
    assert any(t["role"] == "doctor" for t in store.turns(run["id"]))


def test_doctor_training_refuses_bad_input(
    db_path: str, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dialogues = tmp_path / "d.jsonl"
    dialogues.write_text(json.dumps({"messages": DIALOGUE}) + "\n", encoding="utf-8")
    not_gguf = tmp_path / "notes.gguf"
    not_gguf.write_text("not a model")
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(
        json.dumps({"messages": DIALOGUE}).replace("head", "t\u00eate").encode("latin-1")
    )
    cases = (
        (["--dialogues", "nowhere"], "no golden set or dialogue file 'nowhere'"),
        (["--dialogues", str(latin)], "latin.jsonl: not UTF-8 text"),
        (["--dialogues", str(dialogues), "--base", str(not_gguf)], "notes.gguf"),
    )
    for args, said in cases:
        out = invoke(db_path, "train", "doctor", *args, "--name", "x")
        assert out.exit_code != 0 and said in out.output, out.output
        assert "Traceback" not in out.output
    import psutil

    class Tiny:
        available = 2**20

    monkeypatch.setattr(psutil, "virtual_memory", lambda: Tiny())
    out = invoke(db_path, "train", "doctor", "--dialogues", str(dialogues), "--name", "x")
    assert out.exit_code != 0 and "GiB of memory" in out.output, out.output
    assert invoke(db_path, "train", "list", "--json").output.strip() == "[]"
