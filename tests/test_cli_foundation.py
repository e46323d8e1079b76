"""The foundation's commands: version, models, generate, runs."""

from __future__ import annotations

import csv
import io
import json

from click.testing import CliRunner

from engine import __version__
from engine.cli import cli
from engine.core.scoring import Scored
from engine.store.store import Store


def invoke(*args: str, db: str | None = None):
    argv = (["--db", db] if db else []) + list(args)
    return CliRunner().invoke(cli, argv, catch_exceptions=False)


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0 and __version__ in result.output


def test_models_list_json_has_the_embedded_chat_model():
    result = invoke("models", "list", "--json")
    assert result.exit_code == 0
    models = {m["name"]: m for m in json.loads(result.output)}
    assert models["smollm2"]["chat_template"] is True
    assert models["smollm2"]["origin"] == "embedded"


def test_models_list_table():
    result = invoke("models", "list")
    assert result.exit_code == 0
    assert "smollm2" in result.output and "Q4_1" in result.output


def test_models_info():
    result = invoke("models", "info", "smollm2", "--json")
    info = json.loads(result.output)
    assert info["architecture"] == "llama" and info["parameters"] > 100_000_000
    assert "quantization" in invoke("models", "info", "smollm2").output


def test_models_add_and_bad_files_give_one_error_line(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_text("hello")
    result = CliRunner().invoke(cli, ["models", "add", str(bad)])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: broken.gguf: not a GGUF model file (it does not start with 'GGUF')"
    ]
    assert "Traceback" not in result.output
    missing = CliRunner().invoke(cli, ["models", "info", str(tmp_path / "none.gguf")])
    assert missing.exit_code == 1 and "no such file" in missing.output


def test_generate_json_returns_real_text_and_its_speed():
    result = invoke(
        "generate",
        "--prompt",
        "What is the capital of France? Answer in one word.",
        "--max-tokens",
        "12",
        "--json",
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert "Paris" in out["text"]
    assert out["prompt_tokens"] > 0 and 0 < out["completion_tokens"] <= 12
    assert out["tokens_per_second"] > 0


def test_generate_streams_to_the_terminal():
    result = CliRunner().invoke(cli, ["generate", "--prompt", "Say hello.", "--max-tokens", "8"])
    assert result.exit_code == 0
    assert "tokens/s" in result.output


def test_runs_list_show_export(db_path):
    store = Store(db_path)
    store.add_dataset("demo", "exam", [{"id": "q1"}, {"id": "q2"}])
    run_id = store.start_run("exam", "demo", "smollm2", {"shots": 0}, n_total=2)
    right, wrong = ([Scored("exam.letter", 1, {"correct": c})] for c in (True, False))
    store.add_answer(
        run_id, "q1", response="答案：B", chosen="B", gold="B", scores=right, position=0
    )
    store.add_answer(run_id, "q2", response="A", chosen="A", gold="C", scores=wrong, position=1)
    store.finish_run(run_id, {"accuracy": 50.0})
    store.close()

    listed = json.loads(invoke("runs", "list", "--json", db=db_path).output)
    assert [r["id"] for r in listed] == [run_id]
    assert "50.0" in invoke("runs", "list", db=db_path).output

    shown = json.loads(invoke("runs", "show", str(run_id), "--json", db=db_path).output)
    assert shown["run"]["summary"] == {"accuracy": 50.0}
    assert [a["chosen"] for a in shown["answers"]] == ["B", "A"]
    shown_text = invoke("runs", "show", str(run_id), db=db_path).output
    assert shown_text.splitlines()[-1].split() == ["2", "q2", "A", "C", "no"]

    rows = list(
        csv.DictReader(
            io.StringIO(invoke("runs", "export", str(run_id), "--format", "csv", db=db_path).output)
        )
    )
    assert [(r["item_key"], r["correct"]) for r in rows] == [("q1", "1"), ("q2", "0")]
    exported = json.loads(
        invoke("runs", "export", str(run_id), "--format", "json", db=db_path).output
    )
    assert exported["run"]["id"] == run_id

    missing = CliRunner().invoke(cli, ["--db", db_path, "runs", "show", "99"])
    assert missing.exit_code == 1 and "no run with id 99" in missing.output


def test_a_persons_headline_counts_unanswered_questions(store):
    from engine.reports.export import headline_value

    run_id = store.start_run("exam", "demo", "person", runner="person", n_total=3)
    store.finish_run(run_id, {"score": 33.3, "accuracy": 100.0}, status="cancelled")
    assert headline_value(store.run(run_id)) == 33.3
    model_run = store.start_run("exam", "demo", "smollm2", n_total=3)
    store.finish_run(model_run, {"accuracy": 50.0})
    assert headline_value(store.run(model_run)) == 50.0
