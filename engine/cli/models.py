"""``medexam models …`` and ``medexam generate``."""

from __future__ import annotations

import sys

import click

from engine import catalog
from engine.catalog import ModelInfo
from engine.cli import cli
from engine.cli.common import echo_json, friendly_errors, json_option
from engine.runtime import ModelError


def _size(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n < 2**30 else f"{n / 2**30:.1f} GiB"


def _line(m: ModelInfo) -> str:
    chat = "chat" if m.chat_template else "base"
    return (
        f"{m.name:<16} {m.architecture:<10} {m.parameters_human:>6} {m.quantization:<8} "
        f"{chat:<5} {m.context_length:>7} {_size(m.file_size):>9}  {m.origin}"
    )


@cli.group()
def models() -> None:
    """List, inspect and add GGUF models."""


@models.command("list")
@json_option
@friendly_errors(ModelError)
def models_list(as_json: bool) -> None:
    """Every model medexam can run: embedded, in the models folder, or added."""
    found = catalog.list_models()
    if as_json:
        echo_json([m.as_dict() for m in found])
        return
    click.echo(
        f"{'name':<16} {'arch':<10} {'params':>6} {'quant':<8} {'kind':<5} "
        f"{'context':>7} {'size':>9}  origin"
    )
    for m in found:
        click.echo(_line(m))


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
    """Metadata of one model (a name from 'models list' or a path to a .gguf)."""
    _show(catalog.resolve(name), as_json)


@models.command("add")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--name", help="Name to use (default: the file name without .gguf).")
@json_option
@friendly_errors(ModelError)
def models_add(path: str, name: str | None, as_json: bool) -> None:
    """Check a .gguf file and add it to the catalog."""
    m = catalog.add_model(path, name)
    if not as_json:
        click.echo(f"added {m.name}")
    _show(m, as_json)


@cli.command()
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
    """Generate text with a local model (streamed unless --json)."""
    with catalog.open_model(model_name) as model:
        options = {"max_tokens": max_tokens, "temperature": temperature, "seed": seed}
        if raw or not model.has_chat_template:
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
