"""LoRA on a local GGUF chat model, trained on conversations: :func:`lora_task` makes the
loop's :class:`~engine.train.loop.Task` (the base GGUF loaded by transformers with a peft
LoRA, the conversations rendered by the base's own chat template and tokenized as llama.cpp
tokenizes them, the loss on the assistant's turns only, the adapter saved and converted to a
GGUF LoRA). The kinds that train a LoRA make their conversations and call
:func:`lora_task` (a consultation doctor: :mod:`engine.consult.training.finetune`; the French
writer: :mod:`engine.french.train.writer`), their settings extending
:class:`engine.train.settings.LoraSettings`."""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import first_line
from engine.train.loop import Task, TrainError, check_memory

#: Architectures transformers can load from a GGUF file (and llama.cpp can convert back).
ARCHITECTURES = ("llama", "gemma3")

if TYPE_CHECKING:
    import torch

    from engine.core.progress import Cancel
    from engine.models.local import GGUFInfo
    from engine.types import JSONDict

#: The label of a token that is not learned (transformers' ignore index).
IGNORE = -100
#: Where LoRA goes: the attention and MLP projections (never the embeddings or the output).
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

Message = dict[str, str]


def base_model(name: str) -> GGUFInfo:
    """The catalog model ``name`` when it is a local GGUF transformers can load."""
    from engine.models.catalog import resolve
    from engine.models.local import GGUFInfo

    found = resolve(name)
    if not isinstance(found, GGUFInfo) or found.lora:
        what = "a fine-tuned model" if isinstance(found, GGUFInfo) else "not a GGUF file"
        raise TrainError(f"base {name!r} is {what}: LoRA fine-tunes a local GGUF model")
    if found.architecture not in ARCHITECTURES:
        raise TrainError(
            f"base {name!r} is a {found.architecture} model; transformers loads only "
            f"{' and '.join(ARCHITECTURES)} GGUF files for training"
        )
    if not found.chat_template:
        raise TrainError(f"base {name!r} has no chat template: LoRA here fine-tunes a chat model")
    return found


#: Stands for a doctor's turn while the template's marks around one are found.
_PROBE = "\ue000medexam-turn\ue001"
_NOT_TURN_BY_TURN = "the base's chat template does not render a dialogue turn by turn"


def _turn_marks(render: Any, messages: list[Message]) -> tuple[str, str]:
    """What the chat template writes before a doctor's turn (the assistant's header, what
    ``add_generation_prompt`` adds) and after it (its end marker), found by rendering the
    dialogue up to its first doctor turn."""
    first = next(i for i, m in enumerate(messages) if m["role"] == "assistant")
    plain, asked = render(messages[:first], False), render(messages[:first], True)
    answered = render([*messages[:first], {"role": "assistant", "content": _PROBE}], False)
    if not (asked.startswith(plain) and answered.startswith(asked + _PROBE)):
        raise TrainError(_NOT_TURN_BY_TURN)
    return asked[len(plain) :], answered[len(asked) + len(_PROBE) :]


def pieces(
    render: Any, messages: list[Message], cancel: Cancel | None = None
) -> list[tuple[str, bool]]:
    """The rendered dialogue cut into pieces, each with whether it is learned: the doctor's
    turns (what the template writes after the assistant's header, its end marker included)
    are, the rest is not. ``render(messages, add_generation_prompt)`` is the chat template.
    The dialogue is rendered once, whatever its length, and each doctor's turn found in it
    between the template's marks (:func:`_turn_marks`)."""
    if not any(m["role"] == "assistant" for m in messages):
        return [(text, False) for text in [render(messages, False)] if text]
    whole = render(messages, False)
    head, end = _turn_marks(render, messages)
    out: list[tuple[str, bool]] = []
    at = 0
    for m in messages:
        if m["role"] != "assistant":
            continue
        if cancel is not None:
            cancel.check()
        for text in dict.fromkeys((m["content"], m["content"].strip())):
            found = whole.find(head + text + end, at)
            if found >= 0:
                break
        if found < 0:
            raise TrainError(_NOT_TURN_BY_TURN)
        start = found + len(head)
        out += [(whole[at:start], False), (whole[start : start + len(text) + len(end)], True)]
        at = start + len(text) + len(end)
    if at < len(whole):
        out.append((whole[at:], False))
    return [(text, learned) for text, learned in out if text]


def encode(
    render: Any,
    tokenize: Any,
    messages: list[Message],
    max_length: int,
    cancel: Cancel | None = None,
) -> JSONDict | None:
    """``input_ids`` and ``labels`` (the doctor's tokens, :data:`IGNORE` elsewhere) of one
    dialogue, cut at ``max_length`` tokens; None when nothing learned is left. ``cancel``
    is checked at every piece."""
    ids: list[int] = []
    labels: list[int] = []
    for n, (text, learned) in enumerate(pieces(render, messages, cancel)):
        if len(ids) >= max_length:  # the rest is cut: no need to tokenize it
            break
        if cancel is not None:
            cancel.check()
        found = tokenize(text, n == 0)
        ids += found
        labels += found if learned else [IGNORE] * len(found)
    ids, labels = ids[:max_length], labels[:max_length]
    if all(x == IGNORE for x in labels):
        return None
    return {"input_ids": ids, "labels": labels}


def _encoded(
    info: GGUFInfo, dialogues: list[list[Message]], max_length: int, cancel: Cancel | None
) -> list[JSONDict]:
    """Every dialogue encoded with the base's own template and tokenizer (its llama.cpp
    process), the ones with nothing to learn left out."""
    from engine.models.local import LocalModel

    model = LocalModel(info.path, n_ctx=512, n_threads=1)

    def tokenize(text: str, first: bool) -> list[int]:
        return model.tokenize(text, add_bos=first)

    try:
        found = [encode(model.chat_prompt, tokenize, d, max_length, cancel) for d in dialogues]
    finally:
        model.close()
    return [e for e in found if e is not None]


def load_base(info: GGUFInfo, device: str) -> Any:
    """The base GGUF as a transformers causal LM in fp32 (dequantized once, then read from
    :mod:`engine.train.base_cache`)."""
    import torch

    from engine.french.train.reader_data import offline
    from engine.train.base_cache import cached_base

    offline()
    from transformers import AutoModelForCausalLM

    path = Path(info.path)

    def load() -> Any:
        return AutoModelForCausalLM.from_pretrained(
            str(path.parent), gguf_file=path.name, dtype=torch.float32, local_files_only=True
        )

    def read(folder: Path) -> Any:
        return AutoModelForCausalLM.from_pretrained(
            str(folder), dtype=torch.float32, local_files_only=True
        )

    try:  # quiet: transformers' own bar and deprecation notes would break the progress bar
        with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = cached_base(path, load, read)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, ImportError) as exc:
        raise TrainError(f"transformers cannot load {path.name}: {first_line(exc)}") from None
    return model.to(device)


def with_lora(model: Any, settings: JSONDict) -> Any:
    """``model`` with peft LoRA adapters on :data:`TARGETS` (the base frozen)."""
    from peft import LoraConfig, get_peft_model

    names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
    warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing", category=FutureWarning)
    config = LoraConfig(
        r=settings["rank"],
        lora_alpha=settings["alpha"],
        lora_dropout=settings["dropout"],
        target_modules=[t for t in TARGETS if t in names],
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)


def collate(batch: list[JSONDict], pad: int, device: str) -> dict[str, torch.Tensor]:
    """A batch padded to its longest dialogue (padding neither attended to nor learned)."""
    import torch

    width = max(len(e["input_ids"]) for e in batch)
    ids, mask, labels = [], [], []
    for e in batch:
        gap = width - len(e["input_ids"])
        ids.append(e["input_ids"] + [pad] * gap)
        mask.append([1] * len(e["input_ids"]) + [0] * gap)
        labels.append(e["labels"] + [IGNORE] * gap)
    return {
        "input_ids": torch.tensor(ids, device=device),
        "attention_mask": torch.tensor(mask, device=device),
        "labels": torch.tensor(labels, device=device),
    }


def lora_task(
    settings: JSONDict,
    conversations: list[list[Message]],
    device: str,
    about: str,
    cancel: Cancel | None = None,
    **extra: Any,
) -> Task:
    """The loop's task: LoRA on ``settings["base"]`` learning the assistant's turns of
    ``conversations``; ``about`` says what they are (in the training's line), ``extra`` is
    stored with the training and the artefact; ``cancel`` is checked while they are
    encoded."""
    from engine.train.lora import to_gguf

    info = base_model(settings["base"])
    # fp32 weights and their activations for max_length tokens, roughly
    needed = info.parameters * 8 + settings["max_length"] * info.parameters // 1000
    check_memory(needed, "a smaller base or --max-length")
    examples = _encoded(info, conversations, settings["max_length"], cancel)
    if not examples:
        raise TrainError("the data holds no assistant turn to learn")
    model = with_lora(load_base(info, device), settings)
    pad = int(model.config.eos_token_id or 0)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    learned = sum(sum(1 for x in e["labels"] if x != IGNORE) for e in examples)
    described = {
        **extra,
        "base": settings["base"],
        "base_label": info.description or info.name,
        "architecture": info.architecture,
        "rank": settings["rank"],
        "alpha": settings["alpha"],
        "targets": sorted(model.peft_config["default"].target_modules),
    }

    def save(m: torch.nn.Module, target: Path) -> JSONDict:
        return {**described, "lora": to_gguf(m, target).name}

    data = {
        **described,
        "n_train": len(examples),
        "n_conversations": len(conversations),
        "tokens": sum(len(e["input_ids"]) for e in examples),
        "learned_tokens": learned,
        "trainable": trainable,
        "about": f"LoRA r={settings['rank']} on {settings['base']} ({described['base_label']}), "
        f"{len(examples)} {about}, {learned:,} tokens learned, {trainable:,} weights trained",
    }
    return Task(model, examples, lambda batch: collate(batch, pad, device), save, data)
