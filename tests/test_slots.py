"""Slots decided at load time: as many sequences as the free memory holds KV caches for
(one slot's cache read from the GGUF header), up to 8 on a CPU and 16 on a GPU; a number set
by the user reduced to what fits, with one line; refused in one line when not even one
fits. ``models info`` shows the decision."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from engine.cli import cli
from engine.models import gpu, slots
from engine.models.catalog import resolve
from engine.models.hardware import ModelSettings
from engine.models.load import LoadSettings
from engine.models.protocol import ModelError
from engine.models.slots import CPU_CAP, GPU_CAP, KVShape, decide, fit_slots

MiB, GiB = 2**20, 2**30
# SmolLM2-135M's header: 30 blocks, 9 heads of 64, 3 of them for keys and values.
SMOL = {
    "general.architecture": "llama",
    "llama.block_count": 30,
    "llama.embedding_length": 576,
    "llama.attention.head_count": 9,
    "llama.attention.head_count_kv": 3,
}
SMOL_SLOT = 4096 * 30 * 3 * (64 + 64) * 2  # f16 keys and values of 4,096 tokens: 90 MiB


@pytest.fixture(scope="module")
def path() -> str:
    return resolve("smollm2").path


@pytest.fixture
def quiet() -> Iterator[None]:
    yield
    slots._told.clear()


def test_one_slot_is_the_kv_cache_of_its_context_from_the_header():
    shape = KVShape.from_meta(SMOL)
    assert shape == KVShape(layers=30, kv_heads=3, key_length=64, value_length=64)
    assert shape.slot_bytes(4096) == SMOL_SLOT
    gqa = {**SMOL, "llama.attention.key_length": 128, "llama.attention.value_length": 96}
    assert KVShape.from_meta(gqa).token_bytes() == 30 * 3 * (128 + 96) * 2


def test_the_real_header_gives_the_same_shape(path):
    assert slots.kv_shape(path).slot_bytes(4096) == SMOL_SLOT
    sizes, _ = gpu.layer_bytes(path, 4096)  # the GPU plan counts the same cache per layer
    assert sizes[0] - gpu.layer_bytes(path, 0)[0][0] == SMOL_SLOT // 30


def test_automatic_slots_fit_up_to_the_cap():
    roomy = fit_slots(SMOL_SLOT, 20 * GiB, cap=CPU_CAP, n_ctx=4096)
    assert roomy.slots == 8 and not roomy.reduced
    assert roomy.note.startswith("8 slots (the most on a CPU), 90 MiB of KV cache each")
    tight = fit_slots(SMOL_SLOT, 3 * SMOL_SLOT + 1, cap=CPU_CAP)
    assert tight.slots == 3 and "as many as fit" in tight.note and not tight.reduced
    assert fit_slots(SMOL_SLOT, 20 * GiB, cap=GPU_CAP, where="Test GPU").slots == 16


def test_slots_set_are_kept_when_they_fit_and_reduced_when_not():
    kept = fit_slots(SMOL_SLOT, 20 * GiB, cap=CPU_CAP, requested=12)
    assert kept.slots == 12 and kept.note.startswith("12 slots as set") and not kept.reduced
    cut = fit_slots(SMOL_SLOT, 5 * SMOL_SLOT, cap=CPU_CAP, requested=12)
    assert cut.slots == 5 and cut.reduced
    assert cut.note.startswith("12 slots set but only 5 fit") and "\n" not in cut.note


def test_not_even_one_slot_is_refused_in_one_line():
    none = fit_slots(SMOL_SLOT, SMOL_SLOT - 1, cap=CPU_CAP, n_ctx=4096)
    assert none.slots == 0
    with pytest.raises(ModelError, match="not even one slot fits.*lower the context") as exc:
        none.checked()
    assert "\n" not in str(exc.value)


def test_decide_counts_the_weights_and_a_margin_out_of_free_ram(path, quiet):
    weights = resolve("smollm2").file_size
    cpu = ModelSettings(4096, 2, 0)
    assert decide(path, cpu, ram=64 * GiB).slots == CPU_CAP
    ram = weights + slots.RAM_MARGIN + 3 * SMOL_SLOT
    assert decide(path, cpu, ram=ram).slots == 3
    assert decide(path, cpu, ram=weights + slots.RAM_MARGIN).slots == 0
    assert decide(path, ModelSettings(512, 2, 0), ram=ram).slots == CPU_CAP  # 8x less each
    assert decide(path, ModelSettings.of(LoadSettings(n_ctx=4096, threads=2, gpu_layers=0,
                                                      slots=20)), ram=ram).slots == 3  # fmt: skip
    assert decide(path, ModelSettings(4096, 2, 0, slots=2), ram=ram).slots == 2  # its own


def test_with_every_layer_on_a_gpu_its_memory_counts(path):
    sizes, output = gpu.layer_bytes(path, 4096)
    weights = sum(sizes) + output - SMOL_SLOT
    roomy = gpu.Device("Vulkan0", "Test GPU", False, gpu.MARGIN + 4 * GiB, 8 * GiB)
    found = decide(path, ModelSettings(4096, 2, None), ram=0, found=[roomy])
    assert found.slots == GPU_CAP and "the most on a GPU" in found.note
    free = gpu.MARGIN + weights + 5 * SMOL_SLOT + 1
    small = gpu.Device("Vulkan0", "Test GPU", False, free, 8 * GiB)
    assert decide(path, ModelSettings(4096, 2, None), ram=0, found=[small]).slots == 5
    # Kept on the CPU (GPU layers 0), the machine's memory counts, not the GPU's.
    assert decide(path, ModelSettings(4096, 2, 0), ram=64 * GiB, found=[small]).slots == CPU_CAP


def test_a_load_with_too_many_slots_set_is_reduced_with_one_line(path, quiet, monkeypatch):
    weights = resolve("smollm2").file_size
    monkeypatch.setattr(slots, "available_ram", lambda: weights + slots.RAM_MARGIN + 2 * SMOL_SLOT)
    heard: list[str] = []
    slots.tell_reduced(heard.append)
    loaded = ModelSettings(4096, 2, 0, slots=6).for_model(path)
    assert loaded.slots == 2 and loaded.slots_note.startswith("6 slots set but only 2 fit")
    assert heard == [f"SmolLM2-135M-Instruct.Q4_1.gguf: {loaded.slots_note}"]
    assert ModelSettings(4096, 2, 0).for_model(path).slots == 2  # automatic: nothing said
    assert len(heard) == 1
    monkeypatch.setattr(slots, "available_ram", lambda: weights)
    with pytest.raises(ModelError, match="not even one slot fits"):
        ModelSettings(4096, 2, 0).for_model(path)


def cli_run(*args: str) -> object:
    return CliRunner().invoke(cli, list(args))


def test_models_info_says_the_slots_and_why(quiet):
    out = cli_run("models", "info", "smollm2", "--json")
    assert out.exit_code == 0, out.output
    details = json.loads(out.output)
    assert 1 <= details["slots"] <= CPU_CAP
    assert details["slot_memory"] == SMOL_SLOT
    assert details["slots_note"].startswith(f"{details['slots']} slots")
    three = json.loads(cli_run("models", "info", "smollm2", "--slots", "3", "--json").output)
    assert three["slots"] == 3 and three["slots_note"].startswith("3 slots as set")
    text = cli_run("models", "info", "smollm2", "--slots", "3").output
    assert "slots: 3 slots as set, 90 MiB of KV cache each" in text
    bad = cli_run("models", "info", "smollm2", "--slots", "0")
    assert bad.exit_code == 2 and "--slots" in bad.output


@pytest.fixture
def own_pool(monkeypatch) -> Iterator[None]:
    """The command line's pool, fresh: a model another test left loaded is not reused."""
    from engine.models import pool

    fresh = pool.ModelPool()
    monkeypatch.setattr(pool, "_default", fresh)
    yield
    fresh.close()


def test_slots_set_on_the_command_line_are_the_runs_and_stored_with_it(db_path, quiet, own_pool):
    from engine.store.store import Store

    out = CliRunner().invoke(cli, ["--db", db_path, "exam", "run", "--model", "smollm2",
                                   "--method", "logprob", "--limit", "3", "--slots", "3",
                                   "--json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    store = Store(db_path)
    (row,) = store.runs()
    assert row["settings"]["slots"] == {"smollm2": 3}
    assert row["settings"]["flash_attn"] == {"smollm2": False}  # the default
    assert row["settings"]["concurrency"] == 3  # as many items in flight as slots
    assert [a["position"] for a in store.answers(row["id"])] == [0, 1, 2]
    store.close()


def test_slots_that_do_not_fit_are_reduced_with_one_warning_line(monkeypatch, quiet, own_pool):
    weights = resolve("smollm2").file_size
    monkeypatch.setattr(slots, "available_ram", lambda: weights + slots.RAM_MARGIN + 2 * SMOL_SLOT)
    out = CliRunner().invoke(cli, ["generate", "--model", "smollm2", "--prompt", "Hi",
                                   "--max-tokens", "2", "--slots", "6", "--json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    warned = [line for line in out.stderr.splitlines() if line.startswith("Warning:")]
    assert warned == [
        "Warning: SmolLM2-135M-Instruct.Q4_1.gguf: 6 slots set but only 2 fit (90 MiB of KV "
        "cache each for 4,096 tokens; 180 MiB free for them in RAM): 2 slots"
    ]
