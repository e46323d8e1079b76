"""GPU offload decided at load time: the layers that fit a GPU's free memory (planned from
the GGUF header, in llama.cpp's order), the ``gpu`` setting and ``--gpu-layers`` that keep a
model on the CPU, and what a model process reports of where its layers went.

This suite runs on a CPU build, so a real device is not here: plans are made for devices
of a given free memory, and the model loaded is the CPU path. ``scripts/check_gpu.sh``
checks a real Vulkan device (Mesa's lavapipe)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from engine import settings
from engine.cli import cli
from engine.models import gpu
from engine.models.catalog import resolve
from engine.models.hardware import ModelSettings
from engine.models.load import LoadSettings
from engine.models.local import LocalModel

MiB = 2**20


@pytest.fixture(scope="module")
def path() -> str:
    return resolve("smollm2").path


@pytest.fixture
def home(tmp_path, monkeypatch) -> Iterator[None]:
    monkeypatch.setenv("MEDEXAM_HOME", str(tmp_path))
    yield


def card(free_mib: float) -> gpu.Device:
    free = gpu.MARGIN + int(free_mib * MiB)
    return gpu.Device("Vulkan0", "Test GPU", False, free, free + MiB)


def test_every_layer_fits_a_roomy_gpu(path):
    sizes, output = gpu.layer_bytes(path, 4096)
    assert len(sizes) == 30  # SmolLM2-135M's blocks
    # Tied embeddings: the output layer is the token embedding (Q8_0, 34 bytes a 32 weights)
    # and the output norm (576 f32).
    assert output == 49152 * 576 // 32 * 34 + 576 * 4
    kv = 4096 * 3 * (64 + 64) * 2  # f16 keys and values of 3 KV heads of 64
    assert sizes[0] == 2_216_448 + kv  # blk.0's tensors, as the header lists them
    plan = gpu.plan(path, 4096, [card(10_000)])
    assert (plan.layers, plan.offloadable) == (31, 31)
    assert plan.device_bytes == sum(sizes) + output
    assert plan.note == "31/31 layers on Test GPU"


def test_a_small_gpu_takes_the_output_layer_then_the_last_layers(path):
    sizes, output = gpu.layer_bytes(path, 4096)
    room = (output + 2 * sizes[-1]) / MiB + 0.5  # the output layer and two blocks, not three
    plan = gpu.plan(path, 4096, [card(room)])
    assert plan.layers == 3
    assert plan.device_bytes == output + sizes[-1] + sizes[-2]
    assert gpu.plan(path, 4096, [card(output / MiB - 1)]).layers == 0
    tiny = gpu.plan(path, 4096, [card(1)])
    assert tiny.layers == 0 and "does not fit" in tiny.note and "CPU" in tiny.note


def test_a_longer_context_leaves_room_for_fewer_layers(path):
    short, long = (gpu.plan(path, n, [card(60)]).layers for n in (512, 32768))
    assert 0 < long < short


def test_layers_asked_for_are_given_whatever_the_room(path):
    assert gpu.plan(path, 4096, [card(1)], layers=5).layers == 5
    assert gpu.plan(path, 4096, [card(1)], layers=-1).layers == 31
    none = gpu.plan(path, 4096, [card(10_000)], layers=0)
    assert none.layers == 0 and none.note.startswith("GPU layers set to 0")


def test_without_a_device_models_run_on_the_cpu_saying_why(path):
    plan = gpu.plan(path, 4096, [])
    assert plan.layers == 0 and "CPU" in plan.note and "\n" not in plan.note
    assert plan.as_dict()["device"] == "CPU"


def test_why_the_cpu_says_whether_the_build_has_a_gpu_back_end(monkeypatch, tmp_path):
    assert gpu.built_backends() == []  # this suite's build: the CPU only
    assert "has no GPU backend" in gpu.no_device_note()
    # A Vulkan build on a machine without any Vulkan driver: its back end never started.
    lib = tmp_path / "llama_cpp" / "lib"
    lib.mkdir(parents=True)
    (tmp_path / "llama_cpp" / "__init__.py").write_text("")
    for name in ("libggml.so.0", "libggml-base.so.0", "libggml-vulkan.so.0", "libllama.so"):
        (lib / name).write_bytes(b"")
    monkeypatch.setattr("importlib.util.find_spec", lambda name: _spec(tmp_path, name))
    assert gpu.built_backends() == ["Vulkan"]
    assert gpu.no_device_note() == "Vulkan found no GPU driver here: models run on the CPU"


def _spec(root, name):
    import importlib.machinery

    origin = str(root / name / "__init__.py")
    return importlib.machinery.ModuleSpec(name, None, origin=origin)


def test_load_settings_decide_the_gpu_layers(home):
    assert ModelSettings(n_gpu_layers=7).resolved().n_gpu_layers == 7
    assert ModelSettings.of(LoadSettings(gpu_layers=3)).resolved().n_gpu_layers == 3
    assert ModelSettings.of(LoadSettings(gpu_layers=0)).resolved().n_gpu_layers == 0
    settings.set("gpu", "cpu")
    assert ModelSettings().resolved().n_gpu_layers == 0
    with pytest.raises(ValueError, match="-1"):
        LoadSettings(gpu_layers=-2)
    if not gpu.devices():  # this build, no device: nothing left to decide at load time
        settings.set("gpu", "auto")
        assert ModelSettings().resolved().n_gpu_layers == 0


def test_the_model_process_reports_where_its_layers_went(path):
    with LocalModel(path, n_ctx=512) as model:
        info = model.info
        assert model.chat([{"role": "user", "content": "Hi"}], max_tokens=4).text
    assert info["layers"] == 31
    if gpu.devices():
        pytest.skip("a GPU is here: scripts/check_gpu.sh checks the device path")
    assert (info["device"], info["gpu_layers"], info["gpu_memory"]) == ("CPU", 0, 0)
    assert info["gpu_note"] == gpu.no_device_note()


def test_the_load_log_is_read_for_offloaded_layers_and_device_buffers(path):
    import llama_cpp

    log = gpu.LoadLog()
    with log.capture():
        llm = llama_cpp.Llama(model_path=path, n_ctx=256, n_gpu_layers=0, verbose=False)
    del llm
    assert any("model buffer size" in line for line in log.lines)
    assert log.device_bytes(["CPU_Mapped", "CPU_REPACK"]) > 50 * MiB  # the weights, mapped
    assert log.device_bytes(["Vulkan0"]) == 0
    log.lines[:] = [
        "load_tensors: offloaded 31/31 layers to GPU",
        "load_tensors:      Vulkan0 model buffer size =    82.10 MiB",
        "llama_kv_cache:    Vulkan0 KV buffer size =    12.00 MiB",
        "llama_context: Vulkan_Host  output buffer size =     0.19 MiB",
    ]
    assert log.offloaded == (31, 31)
    assert log.device_bytes(["Vulkan0"]) == int(94.10 * MiB)


def run(*args: str) -> object:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_models_gpu_shows_the_devices_and_sets_the_cpu(home):
    shown = run("models", "gpu")
    assert shown.exit_code == 0 and shown.output.count("\n") >= 1
    assert run("models", "gpu", "cpu").exit_code == 0
    assert json.loads(run("models", "gpu", "--json").output)["gpu"] == "cpu"
    assert settings.get("gpu") == "cpu"
    bad = run("models", "gpu", "fast")
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_models_info_says_where_a_model_would_run(home):
    out = run("models", "info", "smollm2", "--json")
    where = json.loads(out.output)["gpu"]
    assert where["layers"] == 31 and where["device"] in (
        "CPU",
        *(d.description for d in gpu.devices()),
    )
    assert "gpu: " in run("models", "info", "smollm2").output


def test_gpu_layers_on_the_commands_that_run_models(home):
    for command in (["exam", "run"], ["consult", "run"], ["french", "run"], ["generate"]):
        assert "--gpu-layers" in run(*command, "--help").output, command
    bad = run("generate", "--prompt", "hi", "--gpu-layers", "-2")
    assert bad.exit_code == 2 and "--gpu-layers" in bad.output and "Traceback" not in bad.output
    ok = run("generate", "--prompt", "hi", "--max-tokens", "2", "--gpu-layers", "0", "--json")
    assert ok.exit_code == 0 and json.loads(ok.output)["completion_tokens"] >= 1
    # where it ran, as llama.cpp reported it: 0 layers asked for, all of them on the CPU
    placed = json.loads(ok.output)
    assert (placed["device"], placed["gpu_layers"], placed["layers"]) == ("CPU", 0, 31)
    assert placed["gpu_note"]
    streamed = run("generate", "--prompt", "hi", "--max-tokens", "2", "--gpu-layers", "0")
    assert f"tokens/s; {placed['gpu_note']}]" in streamed.output
