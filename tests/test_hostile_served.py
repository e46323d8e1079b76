"""What medexam does with a hostile OpenAI-compatible server (:mod:`tests.hostile_server`):
every request ends within its stated seconds and at once on cancel, nothing past a few times
what was asked is read, no redirect is followed, no credential is kept or shown, and every
misbehaviour is one line: never a traceback, never a value that cannot be stored, never a
stored wrong answer of a finished run."""

from __future__ import annotations

import base64
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.core.progress import Cancelled
from engine.core.runs import run
from engine.exam.dataset import ensure_sample
from engine.models import catalog
from engine.models.pool import ModelPool
from engine.models.protocol import ModelError
from engine.models.replies import BadLogprobs, top_tokens
from engine.models.served import (
    NoLogprobs,
    ServedInfo,
    ServedModel,
    ServerUnavailable,
    list_server_models,
)
from engine.models.server import Server
from engine.store.store import Store
from tests.hostile_server import HostileServer, seconds
from tests.served_fixtures import free_port

QUESTION = [{"role": "user", "content": "Which letter?"}]
PROMPT = "Question: which drug?\nA. x\nB. y\nAnswer:"


@pytest.fixture
def pool() -> Iterator[ModelPool]:
    """A model pool of the test's own (its served models closed after it)."""
    p = ModelPool()
    yield p
    p.close()


def one_line(result: Any) -> str:
    """A failed command's output, checked to be one ``Error:`` line and no traceback."""
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = [x for x in result.output.splitlines() if x.startswith("Error:")]
    assert len(lines) == 1, result.output
    return lines[0]


# -- deadlines and cancel -------------------------------------------------------------------


def test_a_dripping_server_holds_a_probe_no_longer_than_its_seconds() -> None:
    with HostileServer("drip", interval=0.5, drip_for=20) as h:
        Server(h.url).close()  # the client library imported first: the server's hold is timed
        took, exc = seconds(lambda: list_server_models(h.url, timeout=2.0))
        assert isinstance(exc, ServerUnavailable) and "no complete answer within 2 s" in str(exc)
        assert took < 3.5
        info = ServedInfo.of("dripping", {"url": h.url, "api_model": "hostile"})
        t0 = time.monotonic()
        status = info.check()  # what `models list` asks, "within 3 s"
        assert time.monotonic() - t0 < 4.5
        assert not status["answers"] and "within 3 s" in status["error"]


def test_a_question_to_a_dripping_server_ends_at_its_request_timeout() -> None:
    """The models list answers; every completion drips without end, retries included."""
    with HostileServer("drip", paths=("/v1/chat",), interval=0.5, drip_for=30) as h:
        model = ServedModel(h.url, timeout=2.0)
        took, exc = seconds(lambda: model.chat(QUESTION, max_tokens=8))
        assert isinstance(exc, ServerUnavailable) and "within 2 s" in str(exc)
        assert took < 3.5
        took, exc = seconds(lambda: model.stream_chat(QUESTION, max_tokens=8).text())
        assert isinstance(exc, ServerUnavailable) and took < 3.5
        model.close()


def test_cancel_reaches_a_request_in_flight_at_once() -> None:
    with HostileServer("drip", paths=("/v1/chat",), interval=0.5, drip_for=30) as h:
        info = ServedInfo.of("dripping", {"url": h.url, "api_model": "hostile"})
        pool = ModelPool(resolve=lambda name: info)
        with pool.lease("dripping") as model:
            threading.Timer(0.5, model.cancel).start()
            took, exc = seconds(lambda: model.chat(QUESTION, max_tokens=8))
            assert isinstance(exc, Cancelled) and took < 1.5
            stream = model.stream_chat(QUESTION, max_tokens=8)
            threading.Timer(0.5, stream.cancel).start()
            took, exc = seconds(stream.text)
            assert exc is None and took < 1.5
            assert stream.result is not None and stream.result.finish_reason == "cancelled"
        pool.close()


def test_ctrl_c_stops_a_run_with_requests_in_flight_at_once(
    models_folder: Path, store: Store, pool: ModelPool
) -> None:
    with HostileServer("drip", questions_only=True, interval=0.5, drip_for=60) as h:
        catalog.add_served(h.url, "slow")
        started: list[int] = []
        settings = {"model": "slow", "method": "generate", "limit": 4, "max_tokens": 8}

        def go() -> None:
            dataset = ensure_sample(store)
            run(store, "exam", dataset, settings, pool=pool, concurrency=4, on_start=started.append)

        threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT)).start()  # Ctrl-C
        took, exc = seconds(go)
    assert isinstance(exc, KeyboardInterrupt) and took < 2.0 + 1.5
    assert store.run(started[0])["status"] == "cancelled"
    assert store.answers(started[0]) == []


def test_ctrl_c_while_a_served_model_opens_is_one_line(models_folder: Path, tmp_path: Path) -> None:
    """Stopped before its run exists (the probes of a slow server): "cancelled", exit 130."""
    with HostileServer("drip", paths=("/v1/completions",), interval=0.5, drip_for=60) as h:
        catalog.add_served(h.url, "slow-to-open")
        args = ["--db", str(tmp_path / "m.db"), "exam", "run", "--model", "slow-to-open"]
        cli_process = subprocess.Popen(
            [sys.executable, "-c", "from engine.entry import main; main()", *args],
            cwd=Path(__file__).resolve().parents[1],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        time.sleep(3.0)
        cli_process.send_signal(signal.SIGINT)
        out, _ = cli_process.communicate(timeout=10)
    assert cli_process.returncode == 130 and b"Traceback" not in out, out
    assert out.decode().strip().splitlines()[-1] == "cancelled"


# -- size ------------------------------------------------------------------------------------


def test_a_huge_answer_is_read_no_further_than_a_few_times_what_was_asked() -> None:
    with HostileServer("huge", huge_bytes=50_000_000) as h:
        model = ServedModel(h.url)
        took, exc = seconds(lambda: model.chat(QUESTION, max_tokens=16))
        assert isinstance(exc, ModelError) and "sent more than 4.0 MiB" in str(exc)
        assert took < 10
        stream = model.stream_chat(QUESTION, max_tokens=16)
        text = stream.text()
        assert text.finish_reason == "truncated" and 0 < len(text.text) <= 16 * 32
        model.close()


def test_a_long_reply_is_cut_and_the_cut_is_stored_with_the_answer(
    models_folder: Path, store: Store, pool: ModelPool
) -> None:
    with HostileServer("long", long_chars=200_000) as h:
        model = ServedModel(h.url)
        g = model.chat(QUESTION, max_tokens=16)
        assert g.finish_reason == "truncated" and len(g.text) == 16 * 32
        model.close()
        catalog.add_served(h.url, "long-winded")
        settings = {"model": "long-winded", "method": "generate", "limit": 1, "max_tokens": 20}
        summary = run(store, "exam", ensure_sample(store), settings, pool=pool)
        (answer,) = store.answers(summary["run_id"])
        assert answer["extra"]["finish_reason"] == "truncated"
        assert len(answer["response"]) <= 20 * 32 + 10


# -- what is not the API ---------------------------------------------------------------------


def test_an_html_page_is_one_line(models_folder: Path) -> None:
    with HostileServer("html") as h:
        with pytest.raises(ServerUnavailable, match="malformed answer from .*not an object"):
            ServedModel(h.url)
        line = one_line(CliRunner().invoke(cli, ["models", "add", "--url", h.url, "--name", "web"]))
        assert "malformed answer" in line and "html" in line


@pytest.mark.parametrize("mode", ["models-strings", "status"])
def test_a_model_list_of_strings_and_a_server_refusing_everything_are_one_line(
    models_folder: Path, mode: str
) -> None:
    with HostileServer(mode) as h:
        with pytest.raises(ModelError) as caught:
            catalog.add_served(h.url, "odd")
        if mode == "status":
            assert "refused the request: this server refuses everything" in str(caught.value)
        else:
            assert "not a model (an object with an id)" in str(caught.value)
        one_line(CliRunner().invoke(cli, ["models", "add", "--url", h.url, "--name", "odd"]))
        assert "odd" not in {m.name for m in catalog.list_models()}


def test_a_server_listing_ten_thousand_models_gets_a_short_line(models_folder: Path) -> None:
    with HostileServer("many-models", n_models=10_000) as h:
        with pytest.raises(ModelError) as caught:
            catalog.add_served(h.url, "many")
        text = str(caught.value)
        assert "10,000 models" in text and "model-00000" in text and "9,995 more" in text
        assert len(text) < 300
        with pytest.raises(ModelError, match="serves no model 'nope'") as caught:
            catalog.add_served(h.url, "many", api_model="nope")
        assert len(str(caught.value)) < 300
        assert catalog.add_served(h.url, "many", api_model="model-09999").name == "many"


# -- redirects -------------------------------------------------------------------------------


def test_a_redirect_is_followed_nowhere(models_folder: Path) -> None:
    with HostileServer("ok") as elsewhere:
        target = elsewhere.url + "/models"
        with HostileServer("redirect", location=target) as h:
            with pytest.raises(ModelError) as caught:
                catalog.add_served(h.url, "moved")
            assert str(caught.value) == (
                f"the server redirected to {target}: medexam follows no redirects"
            )
            args = ["models", "add", "--url", h.url, "--name", "moved"]
            assert "follows no redirects" in one_line(CliRunner().invoke(cli, args))
        assert elsewhere.requests == []


def test_a_redirect_mid_run_fails_the_run_and_stores_no_wrong_answer(
    models_folder: Path, store: Store, pool: ModelPool
) -> None:
    with HostileServer("ok") as elsewhere:
        location = elsewhere.url + "/completions"
        with HostileServer("redirect", questions_only=True, location=location) as h:
            catalog.add_served(h.url, "moving")
            settings = {"model": "moving", "method": "generate", "limit": 3, "max_tokens": 8}
            summary = run(store, "exam", ensure_sample(store), settings, pool=pool)
        assert summary["status"] == "failed"
        assert "follows no redirects" in summary["error"] and "\n" not in summary["error"]
        assert store.answers(summary["run_id"]) == []
        assert elsewhere.requests == []


# -- log-probabilities -----------------------------------------------------------------------

SHAPES = {
    "nan": ({"A": math.nan, "B": -1.0}, "nan as the log-probability of 'A'"),
    "inf": ({"A": -1.0, "B": math.inf}, "inf as the log-probability of 'B'"),
    "minus-inf": ({"A": -math.inf, "B": -1.0}, "-inf as the log-probability of 'A'"),
    "positive": ({"A": 3.5, "B": -1.0}, "above 0"),
    "string": ({"A": "-0.5"}, "text ('-0.5') as the log-probability of 'A'"),
    "object": ({"A": {"logprob": -0.5}}, "dict {'logprob': -0.5} as the log-probability"),
    "list": ([["A", -0.3]], "top log-probabilities after the prompt are list"),
    "number": (5, "top log-probabilities after the prompt are int 5"),
    "text": ("A", "top log-probabilities after the prompt are text"),
    "null": (None, "no top tokens"),
    "empty": ({}, "no top tokens"),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_misshapen_log_probabilities_are_refused_at_the_edge(shape: str) -> None:
    logprobs, words = SHAPES[shape]
    with HostileServer("logprobs", logprobs=logprobs) as h:
        model = ServedModel(h.url)
        assert model.info["supports"]["logprobs"] == "completions"  # the probe's were sane
        with pytest.raises(ModelError) as caught:
            model.logprobs(PROMPT, ["A", "B"])
        assert words in str(caught.value) and "\n" not in str(caught.value)
        model.close()


def test_a_server_whose_every_log_probability_is_nan_names_why_there_are_none() -> None:
    with HostileServer("logprobs", logprobs={"A": math.nan}) as h:
        h.top = lambda prompt: {" Paris": math.nan}  # type: ignore[method-assign]
        model = ServedModel(h.url)
        assert model.info["supports"]["logprobs"] is None
        with pytest.raises(NoLogprobs, match=r"no usable log-probabilities \(.*nan"):
            model.logprobs(PROMPT, ["A", "B"])
        model.close()


def test_a_nan_server_gives_a_failed_run_that_reads_back(
    models_folder: Path, store: Store, pool: ModelPool
) -> None:
    with HostileServer("logprobs", logprobs={"A": math.nan, "B": -1.0}) as h:
        catalog.add_served(h.url, "nan")
        settings = {"model": "nan", "method": "logprob", "limit": 3}
        summary = run(store, "exam", ensure_sample(store), settings, pool=pool)
    assert summary["status"] == "failed"
    assert summary["error"].startswith("3 of 3 items failed") and "nan" in summary["error"]
    assert "\n" not in summary["error"]
    con = sqlite3.connect(store.path)
    for (extra,) in con.execute("SELECT extra FROM answers"):
        json.loads(extra, parse_constant=lambda c: pytest.fail(f"{c} stored in answers.extra"))
    con.execute("SELECT * FROM v_answers").fetchall()
    con.close()
    runner, db = CliRunner(), ["--db", store.path]
    for args in (["runs", "show", str(summary["run_id"])], ["report", str(summary["run_id"])]):
        result = runner.invoke(cli, db + args)
        assert result.exit_code == 0 and "Traceback" not in result.output, result.output


# -- credentials -----------------------------------------------------------------------------


def test_credentials_in_an_address_are_neither_kept_nor_shown(
    models_folder: Path, store: Store, pool: ModelPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOSTILE_AUTH", "alice:s3cret")
    runner = CliRunner()
    with HostileServer("ok") as h:
        with_user = h.url.replace("http://", "http://alice:s3cret@")
        args = ["models", "add", "--url", with_user, "--name", "guarded", "--auth-env"]
        added = runner.invoke(cli, [*args, "HOSTILE_AUTH"])
        assert added.exit_code == 0, added.output
        assert "user:password was taken out of it" in added.output
        sent = h.requests[-1]["headers"].get("Authorization", "")
        assert base64.b64decode(sent.removeprefix("Basic ")) == b"alice:s3cret"
        listed = runner.invoke(cli, ["models", "list"]).output
        as_json = runner.invoke(cli, ["models", "list", "--json"]).output
    registry = catalog._registry_path().read_text()
    for shown in (added.output, listed, as_json, registry):
        assert "s3cret" not in shown and "alice@" not in shown
    assert json.loads(registry)["guarded"]["auth_env"] == "HOSTILE_AUTH"
    settings = {"model": "guarded", "method": "logprob", "limit": 1}
    with pytest.raises(ModelError) as caught:  # the server is gone: the error names no secret
        run(store, "exam", ensure_sample(store), settings, pool=pool)
    assert "s3cret" not in str(caught.value) and "alice" not in str(caught.value)
    nowhere = f"http://alice:s3cret@127.0.0.1:{free_port()}/v1"
    with pytest.raises(ServerUnavailable) as caught:
        ServedModel(nowhere, retries=0)
    assert "s3cret" not in str(caught.value) and "alice" not in str(caught.value)


@pytest.mark.parametrize(
    ("logprobs", "words"),
    [
        ([1, 2], "log-probabilities are list [1, 2], not an object"),
        (5, "log-probabilities are int 5, not an object"),
        ({"top_logprobs": {"A": -1}}, "top log-probabilities are dict"),
        ({"content": 5}, "log-probabilities are int 5"),
        ({"content": [5]}, "first token is int 5, not an object"),
        ({"content": [{"top_logprobs": {"A": -1}}]}, "of the first token are dict"),
        ({"content": [{"top_logprobs": [7]}]}, "listed int 7 among its top tokens"),
        ({"content": [{"top_logprobs": [{"token": 1, "logprob": -1}]}]}, "int 1 as a token"),
        ({"content": [{"top_logprobs": [{"token": "A", "logprob": None}]}]}, "gave null"),
    ],
)
def test_every_shape_of_log_probabilities_but_the_apis_is_refused(
    logprobs: Any, words: str
) -> None:
    with pytest.raises(BadLogprobs) as caught:
        top_tokens({"logprobs": logprobs})
    assert words in str(caught.value)
    content = [{"top_logprobs": [{"token": " A", "logprob": -0.25}, {"token": "B", "logprob": 0}]}]
    assert top_tokens({"logprobs": {"content": content}}) == {" A": -0.25, "B": 0.0}
    assert top_tokens({"logprobs": {"top_logprobs": [{"A": 1e-9}]}}) == {"A": 0.0}


def test_rouge_reads_no_more_than_its_bound_of_a_runaway_reply() -> None:
    from engine.text.rouge import MAX_CHARS, rouge_l, rouge_scores

    reference = "本题考查剂型的分类。故本题选D。"
    runaway = "患者服用二甲双胍后出现乳酸酸中毒。" * 60_000  # a million characters
    took, exc = seconds(lambda: rouge_scores(runaway, reference))
    assert exc is None and took < 5
    assert rouge_scores(runaway, reference) == rouge_scores(runaway[:MAX_CHARS], reference)
    took, exc = seconds(lambda: rouge_l(runaway, runaway))
    assert exc is None and took < 5
