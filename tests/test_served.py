"""Served models: medexam against llama-cpp-python's OpenAI-compatible server on the embedded
SmolLM2 (the real server, on 127.0.0.1, on a free port)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.core.runs import run
from engine.exam.dataset import ensure_sample
from engine.models import catalog
from engine.models.pool import ModelPool
from engine.models.protocol import ModelError
from engine.models.served import ServedModel, ServerUnavailable, candidate_logprobs
from engine.store.store import Store
from tests.served_fixtures import ALIAS, LlamaServer, free_port

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    s = LlamaServer(tmp_path_factory.mktemp("server")).start()
    yield s
    s.stop()


def _add(server: LlamaServer) -> str:
    name = f"served-{server.port}"
    catalog.add_served(server.url, name)
    return name


def _letters(store: Store, run_id: int) -> dict[str, Any]:
    return {a["item_key"]: a["chosen"] for a in store.answers(run_id)}


def test_served_model_answers_through_the_model_interface(server: LlamaServer) -> None:
    with ServedModel(server.url, name="s") as model:
        assert model.api_model == ALIAS
        assert model.info["supports"]["logprobs"] == "completions"
        assert model.capabilities.logprobs and model.capabilities.concurrency == 8
        g = model.chat([{"role": "user", "content": "Hi"}], max_tokens=6, seed=1)
        assert g.text and g.completion_tokens == 6 and g.prompt_tokens > 0
        stream = model.stream_complete("The capital of France is", max_tokens=40)
        pieces = []
        for piece in stream:
            pieces.append(piece)
            if len(pieces) == 3:
                stream.cancel()
        assert stream.result is not None and stream.result.finish_reason == "cancelled"
        assert 3 <= len(pieces) < 40
        lp = model.logprobs("Question: 2 + 2 = ?\nA. 3\nB. 4\nAnswer:", [" A", " B"])
        assert set(lp) == {" A", " B"} and all(v <= 0 for v in lp.values())
        assert model.count_tokens("hello world") == 2


def test_exam_letters_equal_at_concurrency_1_and_4(
    server: LlamaServer, store: Store, chat_model: Any
) -> None:
    name, dataset = _add(server), ensure_sample(store)
    runs = {}
    for method, limit in (("logprob", 3), ("generate", 2)):
        for n in (1, 4):
            settings = {"model": name, "method": method, "limit": limit, "max_tokens": 8}
            s = run(store, "exam", dataset, settings, concurrency=n)
            assert s["status"] == "finished" and s["answered"] == limit
            assert store.run(s["run_id"])["settings"]["concurrency"] == n
            runs[method, n] = s["run_id"]
        assert _letters(store, runs[method, 1]) == _letters(store, runs[method, 4])
    # the served model reads the same letter probabilities as the same GGUF run locally
    local = run(store, "exam", dataset, {"method": "logprob", "limit": 3, "template": "plain"})
    served = {a["item_key"]: a["extra"]["logprobs"] for a in store.answers(runs["logprob", 4])}
    for a in store.answers(local["run_id"]):
        assert served[a["item_key"]] == pytest.approx(a["extra"]["logprobs"], abs=2e-3)


def test_served_runs_default_to_eight_in_flight(server: LlamaServer, store: Store) -> None:
    name = _add(server)
    s = run(store, "exam", ensure_sample(store), {"model": name, "method": "logprob", "limit": 1})
    assert s["status"] == "finished"
    assert store.run(s["run_id"])["settings"]["concurrency"] == 8


def test_french_run_on_a_served_model(server: LlamaServer, store: Store) -> None:
    from engine.french.dataset import ensure_sample as french_sample

    name = _add(server)
    sample = french_sample(store)
    settings = {"model": name, "limit": 2, "method": "logprob"}
    s = run(store, "french", sample["dataset"], settings, concurrency=2)
    assert s["status"] == "finished" and s["answered"] == 2


def test_consultation_with_a_served_doctor_and_a_local_patient(
    server: LlamaServer, store: Store, chat_model: Any
) -> None:
    from engine.consult.cases.cases import ensure_sample as cases_sample

    name = _add(server)
    settings = {"doctor": name, "max_turns": 1, "doctor_max_tokens": 24, "limit": 2}
    s = run(store, "consult", cases_sample(store), settings, concurrency=2)
    assert s["status"] == "finished" and s["answered"] == 2
    for case in ("sample-01", "sample-02"):
        turns = store.turns(s["run_id"], case)
        assert [t["turn"] for t in turns] == sorted(t["turn"] for t in turns)
        assert {"patient", "doctor"} <= {t["role"] for t in turns}


def test_a_server_killed_mid_run_fails_it_and_resume_completes_it(
    tmp_path: Path, store: Store
) -> None:
    srv = LlamaServer(tmp_path).start()
    try:
        name, dataset = _add(srv), ensure_sample(store)

        def kill_after_two(item: Any, answer: dict[str, Any]) -> None:
            if len(store.answered_keys(run_ids[0])) == 2:
                srv.kill()

        run_ids: list[int] = []
        settings = {"model": name, "method": "logprob", "limit": 4}
        s = run(
            store,
            "exam",
            dataset,
            settings,
            concurrency=1,
            on_start=run_ids.append,
            on_answer=kill_after_two,
        )
        assert s["status"] == "failed" and "no answer from" in s["error"]
        assert store.answered_keys(s["run_id"]) == {"sample-01", "sample-02"}
        srv.start()
        again = run(store, "exam", resume=s["run_id"], concurrency=3)
        assert again["status"] == "finished" and again["answered"] == 4
        keys = [a["item_key"] for a in store.answers(s["run_id"])]
        assert sorted(keys) == sorted(set(keys)) and len(keys) == 4
    finally:
        srv.stop()


def test_a_server_without_logprobs_names_the_generate_method(tmp_path: Path, store: Store) -> None:
    srv = LlamaServer(tmp_path, "--logits_all", "false").start()
    try:
        name = _add(srv)
        pool = ModelPool()
        with pool.lease(name) as model:
            assert model.info["supports"]["logprobs"] is None
        settings = {"model": name, "method": "logprob", "limit": 2}
        s = run(store, "exam", ensure_sample(store), settings, pool=pool)
        assert s["status"] == "failed" and "'generate' method" in s["error"]
        settings = {"model": name, "method": "generate", "limit": 1, "max_tokens": 8}
        assert run(store, "exam", ensure_sample(store), settings, pool=pool)["answered"] == 1
        pool.close()
    finally:
        srv.stop()


def test_a_bad_url_is_one_clear_error(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(ModelError, match="no answer from"):
        catalog.add_served(url, "nowhere")
    with pytest.raises(ModelError, match="not a server address"):
        catalog.add_served("localhost:8000", "nowhere")
    result = CliRunner().invoke(cli, ["models", "add", "--url", url, "--name", "nowhere"])
    assert result.exit_code == 1
    assert result.output.startswith("Error: no answer from") and "Traceback" not in result.output
    assert "nowhere" not in {m.name for m in catalog.list_models()}


def test_models_commands_add_list_info_remove(server: LlamaServer, monkeypatch: Any) -> None:
    cli_runner = CliRunner()
    name = f"cli-{server.port}"
    monkeypatch.setenv("SERVED_TEST_KEY", "secret-key-value")
    args = ["models", "add", "--url", server.url, "--name", name, "--api-key-env"]
    added = cli_runner.invoke(cli, [*args, "SERVED_TEST_KEY"])
    assert added.exit_code == 0, added.output
    assert "secret-key-value" not in Path(catalog._registry_path()).read_text()
    listed = cli_runner.invoke(cli, ["models", "list"])
    line = next(x for x in listed.output.splitlines() if x.startswith(name))
    assert "served" in line and "answers" in line and "does not answer" not in line
    info = cli_runner.invoke(cli, ["models", "info", name, "--json"])
    assert '"logprobs": "completions"' in info.output and ALIAS in info.output
    details = json.loads(info.output)
    assert details["backend"] == "openai" and details["url"] == server.url
    assert not {"architecture", "parameters", "file_size"} & set(details)  # no GGUF fields
    assert cli_runner.invoke(cli, ["models", "remove", name]).exit_code == 0
    assert name not in {m.name for m in catalog.list_models()}


def test_candidate_logprobs_from_top_tokens() -> None:
    top = {"A": -0.5, " A": -1.5, "B": -2.0, "\n": -3.0}
    got = candidate_logprobs(top, ["A", "B", "C"])
    assert got["A"] == -0.5 and got["B"] == -2.0 and got["C"] == -3.0
    assert candidate_logprobs(top, [" B"])[" B"] == -2.0


class _Broken(http.server.BaseHTTPRequestHandler):
    """A server gone wrong: malformed JSON on /ok-but-garbage, 503 elsewhere."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        garbage = self.path.startswith("/garbage")
        self.send_response(200 if garbage else 503)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{not json" if garbage else b'{"error": {"message": "overloaded"}}')

    def log_message(self, *args: Any) -> None:
        pass


def test_malformed_answers_and_server_errors_are_one_line() -> None:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Broken)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        with pytest.raises(ServerUnavailable, match="malformed answer"):
            ServedModel(base + "/garbage/v1", "m", retries=0)
        with pytest.raises(ServerUnavailable, match="answered 503: overloaded"):
            ServedModel(base + "/v1", "m", retries=1)
    finally:
        httpd.shutdown()


def test_a_served_judge_rates_explanations_several_at_once(
    server: LlamaServer, store: Store, scripted_pool: Any
) -> None:
    from engine.core.scoring import rescore
    from engine.models.scripted import ScriptedModel
    from engine.ratings.perspectives import KEYS

    def why(request: Any) -> str:
        return "答案：B\n解析：本题考查药物的作用机制，B项正确。"

    pool = scripted_pool(ScriptedModel("student-model", replies=why))
    done = run(
        store, "exam", ensure_sample(store), {"model": "student-model", "limit": 2}, pool=pool
    )
    name = _add(server)
    result = rescore(store, done["run_id"], ["explanation-judge"], options={"judge": name})
    assert result.scored == {f"explanation-judge@{name}": 2}
    rows = store.rated_rows([done["run_id"]], "explanation-judge")
    parsed = [r for r in rows if r["key"] == "parsed"]
    assert len(parsed) == 2 and all(r["value"] for r in parsed), [r["explanation"] for r in parsed]
    ratings = [r["value"] for r in rows if r["key"] in KEYS]
    assert len(ratings) == 10 and all(1 <= v <= 5 for v in ratings)
