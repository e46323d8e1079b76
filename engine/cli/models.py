"""``medexam models …`` and ``medexam generate``."""

from __future__ import annotations

import sys

import click

from engine import catalog
from engine.catalog import ModelInfo
from engine.cli.common import echo_json, friendly_errors, json_option
from engine.models.checks import checked_default, problems
from engine.models.protocol import ModelError


def _size(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n < 2**30 else f"{n / 2**30:.1f} GiB"


def _line(m: ModelInfo, answers: bool | None = None) -> str:
    if m.served:
        state = "answers" if answers else "does not answer"
        return f"{m.name:<16} {'served':<10} {m.api_model[:40]:<40} {state:<16}  {m.path}"
    chat = "chat" if m.chat_template else "base"
    return (
        f"{m.name:<16} {m.architecture:<10} {m.parameters_human:>6} {m.quantization:<8} "
        f"{chat:<5} {m.context_length:>7} {_size(m.file_size):>9}  {m.origin}"
    )


@click.group()
def models() -> None:
    """List, inspect, add and remove models: GGUF files and served models."""


@models.command("list")
@json_option
@friendly_errors(ModelError)
def models_list(as_json: bool) -> None:
    """Every model medexam can run: embedded, in the models folder, added, or served (with
    whether its server answers now)."""
    found = catalog.list_models()
    status = {m.name: catalog.server_status(m) for m in found if m.served}
    bad = problems()
    default, message = checked_default()
    if message:
        click.echo(f"Warning: {message}.", err=True)
    if as_json:
        rows = [
            m.as_dict()
            | {"usable": True, "default": m.name == default}
            | ({"server": status[m.name]} if m.served else {})
            for m in found
        ]
        rows += [
            {k: v for k, v in p._asdict().items() if k != "reason"}
            | {"usable": False, "problem": p.reason}
            for p in bad
        ]
        echo_json(rows)
        return
    click.echo(
        f"{'name':<16} {'arch':<10} {'params':>6} {'quant':<8} {'kind':<5} "
        f"{'context':>7} {'size':>9}  origin"
    )
    for m in found:
        click.echo(_line(m, status[m.name]["answers"] if m.served else None))
    click.echo(f"default chat model: {default}")
    if bad:
        click.echo(f"{len(bad)} model file(s) cannot be used:")
    for p in bad:
        where = "models folder" if p.origin == "folder" else f"added as {p.name}"
        click.echo(f"  {p.path} ({where}): {p.reason}")


def _show(m: ModelInfo, as_json: bool) -> None:
    if as_json:
        echo_json(m.as_dict())
        return
    for key, value in m.as_dict().items():
        click.echo(f"{key:>17}: {value}")


@models.command("info")
@click.argument("name")
@json_option
@friendly_errors(ModelError)
def models_info(name: str, as_json: bool) -> None:
    """Metadata of one model (a name from 'models list' or a path to a .gguf); for a
    served model, what its server lists and what a probe finds it supports."""
    m = catalog.resolve(name)
    if not m.served:
        _show(m, as_json)
        return
    local_only = ("architecture", "parameters", "parameters_human", "quantization")
    details = {k: v for k, v in m.as_dict().items() if k not in local_only}
    for key in ("context_length", "chat_template", "file_size"):
        details.pop(key)
    details["server"] = catalog.server_status(m)
    if details["server"]["answers"]:
        with catalog.open_model(name) as model:
            details["probe"] = model.info
    if as_json:
        echo_json(details)
        return
    for key, value in details.items():
        click.echo(f"{key:>17}: {value}")


@models.command("add")
@click.argument("path", type=click.Path(dir_okay=False), required=False)
@click.option("--name", help="Name to use (default: the file name without .gguf).")
@click.option("--url", help="A served model: the server's address, http://HOST:PORT/v1.")
@click.option("--api-model", help="The server's id of the model (default: its only one).")
@click.option("--api-key-env", help="Environment variable holding the server's API key.")
@json_option
@friendly_errors(ModelError)
def models_add(
    path: str | None,
    name: str | None,
    url: str | None,
    api_model: str | None,
    api_key_env: str | None,
    as_json: bool,
) -> None:
    """Check a .gguf file and add it to the catalog, or (--url, --name) a model served over
    the OpenAI API by vLLM, llama-server, Ollama or LM Studio."""
    if url is None:
        if path is None:
            raise click.UsageError("give a .gguf file, or --url and --name for a served model")
        m = catalog.add_model(path, name)
    else:
        if path is not None or not name:
            raise click.UsageError("a served model takes --url and --name, and no file")
        m = catalog.add_served(url, name, api_model, api_key_env)
    if not as_json:
        click.echo(f"added {m.name}")
    _show(m, as_json)


@models.command("remove")
@click.argument("name")
@friendly_errors(ModelError)
def models_remove(name: str) -> None:
    """Forget an added model (a file stays where it is; a server is not touched)."""
    catalog.remove_model(name)
    click.echo(f"removed {name}")


@click.command()
@click.option("--model", "model_name", default=None, help="Model name (default: smollm2).")
@click.option("--prompt", required=True, help="The user message (or text to continue).")
@click.option("--max-tokens", default=256, show_default=True, type=click.IntRange(1))
@click.option("--temperature", default=0.0, show_default=True, type=click.FloatRange(0))
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--raw", is_flag=True, help="Plain completion, no chat template.")
@json_option
@friendly_errors(ModelError)
def generate(
    model_name: str | None,
    prompt: str,
    max_tokens: int,
    temperature: float,
    seed: int,
    raw: bool,
    as_json: bool,
) -> None:
    """Generate text with a model, local or served (streamed unless --json)."""
    with catalog.open_model(model_name) as model:
        options = {"max_tokens": max_tokens, "temperature": temperature, "seed": seed}
        chats = model.has_chat_template or bool(model.info.get("served"))
        if raw or not chats:
            stream = model.stream_complete(prompt, **options)
        else:
            stream = model.stream_chat([{"role": "user", "content": prompt}], **options)
        for piece in stream:
            if not as_json:
                click.echo(piece, nl=False)
        result = stream.result
        assert result is not None
    if as_json:
        echo_json(result.as_dict())
    else:
        click.echo()
        click.echo(
            f"[{result.prompt_tokens} prompt + {result.completion_tokens} tokens, "
            f"{result.tokens_per_second:.1f} tokens/s]",
            err=True,
        )
        sys.stdout.flush()
