"""The scripted model: replies, letters, delays, failures, token counts and context as its
script says; a registered backend that a pool leases by name, with no process."""

from __future__ import annotations

import json
import threading
import time

import pytest

from engine.models.backend import backend, backends, default_concurrency
from engine.models.protocol import ChatModel, ModelCrashed, ModelError
from engine.models.scripted import ScriptedModel

HI = [{"role": "user", "content": "Say hello."}]


def test_replies_in_turn_or_from_the_request():
    model = ScriptedModel(replies=["one two three", "four"])
    assert isinstance(model, ChatModel)
    assert [model.chat(HI).text for _ in range(3)] == ["one two three", "four", "one two three"]
    echo = ScriptedModel(replies=lambda r: f"{r.kind} {r.number}: {r.prompt[-6:]}")
    assert echo.complete("Once upon a time").text == "complete 1: a time"
    assert echo.chat(HI).text.startswith("chat 2: ")
    assert [r.kind for r in echo.requests] == ["complete", "chat"]
    assert echo.requests[1].messages == tuple(HI)
    assert "<|user|>\nSay hello.\n<|assistant|>" in echo.requests[1].prompt


def test_tokens_max_tokens_stops_and_streams():
    model = ScriptedModel(replies="alpha beta gamma delta", tokens=lambda t: len(t.split()))
    g = model.complete("a b c", max_tokens=2)
    assert (g.text, g.prompt_tokens, g.completion_tokens, g.finish_reason) == (
        "alpha beta",
        3,
        2,
        "length",
    )
    assert model.complete("x", stop=[" gamma"]).text == "alpha beta"
    stream = model.stream_chat(HI)
    pieces = []
    for piece in stream:
        pieces.append(piece)
        stream.cancel()
    assert pieces == ["alpha"] and stream.result is not None
    assert stream.result.finish_reason == "cancelled" and stream.result.text == "alpha"
    assert model.count_tokens("one two") == 2


def test_a_base_model_chats_in_a_plain_transcript():
    model = ScriptedModel(replies="Hello.\nUser: and more", chat_template=False)
    assert not model.has_chat_template and not model.capabilities.chats
    assert model.chat(HI).text == "Hello."  # cut at the next turn
    assert model.requests[0].prompt.endswith("User: Say hello.\nAssistant:")
    with pytest.raises(ModelError, match="no chat template"):
        model.chat_prompt(HI)


def test_letter_logprobs_from_the_reply_a_table_or_a_function():
    model = ScriptedModel(replies=["答案：C", "A + D"])
    first = model.logprobs("Q", ["A", "B", "C"])
    assert max(first, key=first.get) == "C" and first["A"] == first["B"] < first["C"]
    second = model.logprobs("Q", [" A", " D"])
    assert second[" A"] > second[" D"]  # the first capital letter standing alone
    table = ScriptedModel(logprobs={"B": -0.1, "A": -2.0})
    assert table.logprobs("Q", [" A", " B", " C"]) == {" A": -2.0, " B": -0.1, " C": -10.0}
    picked = ScriptedModel(logprobs=lambda r: {"E" if "last" in r.prompt else "A": 0.0})
    assert picked.logprobs("the last one", ["A", "E"])["E"] == 0.0
    with pytest.raises(ModelError, match="no log-probabilities"):
        ScriptedModel(has_logprobs=False).logprobs("Q", ["A"])


def test_errors_crashes_and_the_context():
    model = ScriptedModel(errors={2: "the prompt is too long"}, crash_on={3}, n_ctx=10)
    assert model.chat(HI).text == "A"
    with pytest.raises(ModelError, match="too long"):
        model.chat(HI)
    with pytest.raises(ModelCrashed, match="stopped"):
        model.chat(HI)
    assert not model.alive
    with pytest.raises(ModelCrashed, match="not running"):
        model.chat(HI)
    model.restart()
    assert model.alive and model.chat(HI).text == "A"
    with pytest.raises(ModelError, match="the context holds 10"):
        model.complete("word " * 40)
    boom = ScriptedModel(errors={1: KeyError("raised as it is")})
    with pytest.raises(KeyError):
        boom.chat(HI)


def test_delays_and_cancel():
    model = ScriptedModel(delay=lambda r: 0.2 if r.number == 1 else 0.0)
    started = time.perf_counter()
    model.chat(HI)
    assert time.perf_counter() - started >= 0.2
    slow = ScriptedModel(delay=30.0)
    threading.Timer(0.2, slow.cancel).start()
    started = time.perf_counter()
    slow.chat(HI)
    assert time.perf_counter() - started < 10


def test_backends_are_registered():
    assert {"gguf", "openai", "scripted"} <= set(backends())
    with pytest.raises(ModelError, match="no model backend named 'nope'"):
        backend("nope")
    one, eight = ScriptedModel(concurrency=1), ScriptedModel(concurrency=8)
    assert default_concurrency([eight, eight]) == 8
    assert default_concurrency([eight, one]) == 1 and default_concurrency([]) == 1


def test_a_pool_leases_scripted_models_by_name(scripted_pool):
    doctor, patient = ScriptedModel("doctor", replies="Q?"), ScriptedModel("patient", size=10)
    pool = scripted_pool(doctor, patient, max_bytes=15)
    with pool.lease(None) as a, pool.lease("patient") as b, pool.lease("doctor") as c:
        assert a.name == c.name == "doctor" and b.name == "patient"
        assert a.chat(HI).text == "Q?" and a.capabilities == doctor.capabilities
        assert {m["name"]: m["leases"] for m in pool.status()} == {"doctor": 2, "patient": 1}
        assert a.model_info.location == "scripted:doctor"
    with pytest.raises(ModelError, match="known: doctor, patient"):
        pool.acquire("smollm2")
    big = ScriptedModel("big", size=10)
    small = scripted_pool(patient, big, max_bytes=15)
    with small.lease("big"):
        pass
    with small.lease("patient"):
        assert small.state("big") == "unloaded"  # idle and over the bound: closed


def test_a_crashed_scripted_model_restarts_on_the_next_lease(scripted_pool):
    model = ScriptedModel(crash_on={1})
    pool = scripted_pool(model)
    with pool.lease(None) as held, pytest.raises(ModelCrashed):
        held.chat(HI)
    assert pool.state("scripted") == "crashed"
    with pool.lease(None) as again:
        assert again.chat(HI).text == "A" and pool.state("scripted") == "ready"
    assert model.opened == 2


def test_a_scripted_model_in_the_catalog(models_folder):
    from engine.models import catalog
    from engine.paths import data_dir

    entry = {"backend": "scripted", "replies": ["B"], "errors": {"2": "no"}, "n_ctx": 64}
    (data_dir() / "models.json").write_text(json.dumps({"script": entry}))
    found = catalog.resolve("script")
    assert found.backend == "scripted" and found.removable
    assert "script" in {m.name for m in catalog.list_models()}
    with catalog.open_model("script") as model:
        assert model.chat(HI).text == "B" and model.info["n_ctx"] == 64
        with pytest.raises(ModelError, match="no"):
            model.chat(HI)
    catalog.remove_model("script")
