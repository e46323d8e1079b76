"""``medexam models …`` and ``medexam generate``."""

from __future__ import annotations

import math
import sys
from typing import Any

import click

from engine.cli.common import COUNT, echo_json, json_option, load_options
from engine.models import catalog
from engine.models.backend import ModelInfo
from engine.models.checks import checked_default, problems
from engine.models.load import LoadSettings
from engine.models.server import split_credentials
from engine.text.columns import visible


def _line(m: ModelInfo, status: dict[str, Any] | None, width: int = 16) -> str:
    """One row of ``models list``: what the model's backend says of it in short, whether it
    answers (a remote model), its origin and where it is (a fine-tuned model's adapter)."""
    what = m.summary(long=True)
    if status is not None:
        what += " · " + ("answers" if status["answers"] else "does not answer")
    where = getattr(m, "lora", None) or m.location
    return visible(f"{m.name:<{width}} {what:<54} {m.origin:<9} {where}")


def _statuses(found: list[ModelInfo]) -> dict[str, dict[str, Any]]:
    """Whether each remote model answers now (nothing to ask of the others)."""
    return {m.name: m.check() for m in found if m.remote}


@click.group()
def models() -> None:
    """List, inspect, add and remove models: GGUF files and served models."""


@models.command("list")
@json_option
def models_list(as_json: bool) -> None:
    """Every model medexam can run: embedded, in the models folder, added, or served (with
    whether its server answers now)."""
    found = catalog.list_models()
    status = _statuses(found)
    bad = problems()
    default, message = checked_default()
    if message:
        click.echo(visible(f"Warning: {message}."), err=True)
    if as_json:
        rows = [
            m.as_dict()
            | {"usable": True, "default": m.name == default}
            | ({"server": status[m.name]} if m.name in status else {})
            for m in found
        ]
        rows += [
            {k: v for k, v in p._asdict().items() if k != "reason"}
            | {"usable": False, "problem": p.reason}
            for p in bad
        ]
        echo_json(rows)
        return
    width = max([16, *(len(m.name) for m in found)])
    click.echo(f"{'name':<{width}} {'model':<54} {'origin':<9} where")
    for m in found:
        click.echo(_line(m, status.get(m.name), width))
    click.echo(visible(f"default chat model: {default}"))
    if bad:
        click.echo(f"{len(bad)} model file(s) cannot be used:")
    for p in bad:
        where = {"folder": "models folder", "trained": f"trained model {p.name}"}.get(
            p.origin, f"added as {p.name}"
        )
        click.echo(visible(f"  {p.path} ({where}): {p.reason}"))


def _details(m: ModelInfo, load: LoadSettings | None = None) -> dict[str, Any]:
    """What ``models info`` shows: the backend's description of the model (where it would
    run and its slots if loaded with ``load``); for a remote one, whether it answers and
    what a probe of it finds (opening it, loading nothing)."""
    details = m.as_dict()
    gpu = m.placement(load)
    if gpu:
        details["gpu"] = gpu
    details |= m.slots(load)  # a local model's slots, and why
    if m.remote:
        details["server"] = m.check()
        if details["server"]["answers"]:
            with catalog.open_model(m.name) as model:
                details["probe"] = model.info
    return details


def _gpu_line(gpu: dict[str, Any]) -> str:
    if not gpu["gpu_layers"]:
        return gpu["gpu_note"]
    return f"{gpu['gpu_note']}, about {gpu['gpu_memory'] / 2**20:.0f} MiB"


def _show(details: dict[str, Any], as_json: bool) -> None:
    if as_json:
        echo_json(details)
        return
    for key, value in details.items():
        if key in ("slots_note", "slot_memory"):
            continue  # said with the slots
        shown = _gpu_line(value) if key == "gpu" else value
        if key == "slots":
            shown = details.get("slots_note") or value
        click.echo(visible(f"{key:>17}: {shown}"))


@models.command("info")
@click.argument("name")
@load_options
@json_option
def models_info(name: str, as_json: bool, load: LoadSettings) -> None:
    """Metadata of one model (a name from 'models list' or a path to a .gguf): where a
    local one would run and how many sequences it would decode at once (its slots, and
    why; --slots N: whether N fit); for a served model, what its server lists and what a
    probe finds it supports."""
    _show(_details(catalog.resolve(name), load), as_json)


@models.command("flash-attn")
@click.argument("use", type=click.Choice(["on", "off"]), required=False)
def models_flash_attn(use: str | None) -> None:
    """llama.cpp's flash attention for local models: 'off' (the default) or 'on'. On, several
    sequences at once decode faster on a CPU, but a long context's numbers then depend on the
    model's threads, which follow the machine's load, and greedy answers may change: each run
    stores it, so a re-run can match an earlier one."""
    from engine import settings

    if use is not None:
        settings.set("flash_attn", use)
    click.echo(f"flash attention: {settings.get('flash_attn')}")


@models.command("gpu")
@click.argument("use", type=click.Choice(["auto", "cpu"]), required=False)
@json_option
def models_gpu(use: str | None, as_json: bool) -> None:
    """The GPUs local models can use, and whether they do: 'auto' (the default) puts on a
    GPU the layers that fit its free memory, 'cpu' keeps every model on the CPU."""
    from engine import settings
    from engine.models import gpu

    if use is not None:
        settings.set("gpu", use)
    found = gpu.devices()
    setting = settings.get("gpu")
    if as_json:
        rows = [d.__dict__ | {"label": d.label()} for d in found]
        echo_json({"gpu": setting, "backends": gpu.backends(), "devices": rows})
        return
    for d in found:
        click.echo(f"GPU: {d.label()}")
    if not found:
        click.echo(gpu.no_device_note())
    elif setting == "cpu":
        click.echo("the gpu setting is 'cpu': models run on the CPU ('models gpu auto' to use it)")
    else:
        click.echo(
            "models put on it the layers that fit its free memory ('models gpu cpu' to stop)"
        )


@models.command("add")
@click.argument("path", type=click.Path(dir_okay=False), required=False)
@click.option("--name", help="Name to use (default: the file name without .gguf).")
@click.option("--url", help="A served model: the server's address, http://HOST:PORT/v1.")
@click.option("--api-model", help="The server's id of the model (default: its only one).")
@click.option("--api-key-env", help="Environment variable holding the server's API key.")
@click.option(
    "--auth-env",
    help="Environment variable holding the server's user:password (HTTP basic authentication).",
)
@json_option
def models_add(
    path: str | None,
    name: str | None,
    url: str | None,
    api_model: str | None,
    api_key_env: str | None,
    auth_env: str | None,
    as_json: bool,
) -> None:
    """Check a .gguf file and add it to the catalog, or (--url, --name) a model served over
    the OpenAI API by vLLM, llama-server, Ollama or LM Studio. medexam keeps no secret: an
    API key and a user:password are read from the environment variables named by
    --api-key-env and --auth-env whenever the model is used."""
    if url is None:
        if path is None:
            raise click.UsageError("give a .gguf file, or --url and --name for a served model")
        m = catalog.add_model(path, name)
    else:
        if path is not None or not name:
            raise click.UsageError("a served model takes --url and --name, and no file")
        if split_credentials(url)[1] is not None:
            click.echo(
                "Warning: the address's user:password was taken out of it and is neither used "
                "nor kept; put it in an environment variable named with --auth-env.",
                err=True,
            )
        m = catalog.add_served(url, name, api_model, api_key_env, auth_env)
    if not as_json:
        click.echo(visible(f"added {m.name}"))
    _show(m.as_dict(), as_json)


@models.command("quantize")
@click.argument("name")
@click.option(
    "--types",
    "kinds",
    required=True,
    metavar="A,B",
    help="The types to write, separated by commas: Q8_0, Q6_K, Q5_K_M, Q4_K_M, Q3_K_M, Q2_K…",
)
@json_option
def models_quantize(name: str, kinds: str, as_json: bool) -> None:
    """Write model NAME as each of --types with llama.cpp's quantizer, from its highest
    precision (its file when F32/BF16/F16, else that file converted to F32 first, added as
    NAME-f32), each added to the catalog as NAME-TYPE. A file finished before is kept: the
    same command goes on after a stop. Compare them with
    'medexam experiment run quantizations --models NAME --dataset D'."""
    from engine.cli.running import progress_bar
    from engine.models.quantize import quantize_model

    with progress_bar(f"quantizing {name}", as_json, unit="tensors") as update:
        made = quantize_model(name, kinds.split(","), progress=update)
    if as_json:
        echo_json([m.as_dict() for m in made])
        return
    for m in made:
        said = "written" if m.made else "kept (written before)"
        size = f"{m.file_size / 2**20:.0f} MiB"
        click.echo(visible(f"{m.name:<20} {m.kind:<7} {size:>9}  {said}  {m.path}"))


@models.command("remove")
@click.argument("name")
def models_remove(name: str) -> None:
    """Forget an added model (a file stays where it is; a server is not touched)."""
    catalog.remove_model(name)
    click.echo(visible(f"removed {name}"))


def _finite(_ctx: click.Context, param: click.Parameter, value: float) -> float:
    """A number option's value once it is a number: nan and infinity are refused."""
    if not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number", param=param)
    return value


@click.command()
@click.option(
    "--model",
    "model_name",
    default=None,
    help="Model name or .gguf path (default: the default chat model).",
)
@click.option("--prompt", required=True, help="The user message (or text to continue).")
@click.option("--max-tokens", default=256, show_default=True, type=COUNT)
@click.option(
    "--temperature", default=0.0, show_default=True, type=click.FloatRange(0), callback=_finite
)
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--raw", is_flag=True, help="Plain completion, no chat template.")
@load_options
@json_option
def generate(
    model_name: str | None,
    prompt: str,
    max_tokens: int,
    temperature: float,
    seed: int,
    raw: bool,
    as_json: bool,
    load: LoadSettings,
) -> None:
    """Generate text with a model, local or served (streamed unless --json)."""
    with catalog.open_model(model_name, **load.kwargs()) as model:
        options = {"max_tokens": max_tokens, "temperature": temperature, "seed": seed}
        if raw or not model.capabilities.chats:
            stream = model.stream_complete(prompt, **options)
        else:
            stream = model.stream_chat([{"role": "user", "content": prompt}], **options)
        for piece in stream:
            if not as_json:
                click.echo(visible(piece, newlines=True), nl=False)  # a server's text too
        result = stream.result
        assert result is not None
        # Where a local model ran: its device and the layers llama.cpp put there.
        from engine.models.gpu import PLACEMENT

        info = getattr(model, "info", None) or {}
        placed = {key: info[key] for key in PLACEMENT if key in info}
    if as_json:
        echo_json(result.as_dict() | placed)
    else:
        click.echo()
        where = f"; {placed['gpu_note']}" if placed.get("gpu_note") else ""
        click.echo(
            f"[{result.prompt_tokens} prompt + {result.completion_tokens} tokens, "
            f"{result.tokens_per_second:.1f} tokens/s{where}]",
            err=True,
        )
        sys.stdout.flush()
