"""The catalog's description of a GGUF model file: its header's facts
(:func:`engine.models.gguf.cached_info`, read without loading it) and, for a fine-tuned
model, the LoRA loaded over it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from engine.models.backend import ModelInfo
from engine.models.gguf import cached_info

if TYPE_CHECKING:
    from engine.models.load import LoadSettings


def _size(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n < 2**30 else f"{n / 2**30:.1f} GiB"


@dataclass(frozen=True, kw_only=True)
class GGUFInfo(ModelInfo):
    """A GGUF model file, as its header describes it."""

    backend: ClassVar[str] = "gguf"

    path: str
    architecture: str
    parameters: int
    quantization: str
    context_length: int  # the trained context, in tokens
    chat_template: bool
    file_size: int
    lora: str | None = None  # a GGUF LoRA loaded over the file (a trained doctor)

    @classmethod
    def read(
        cls,
        name: str,
        path: str | Path,
        origin: str,
        description: str = "",
        parts: Sequence[Path] = (),
    ) -> GGUFInfo:
        """The file at ``path`` described from its header (read once per version of the
        file); :class:`~engine.models.gguf.BadModelFile` when it cannot be a model. ``parts``:
        the pieces a file not yet there is assembled from (its header is in the first)."""
        if parts:
            header = asdict(cached_info(parts[0], sum(p.stat().st_size for p in parts)))
        else:
            header = asdict(cached_info(path))
        description = description or header["model_name"]
        facts = {k: v for k, v in header.items() if k in cls.__dataclass_fields__}
        return cls(name=name, origin=origin, description=description, path=str(path), **facts)

    @property
    def location(self) -> str:
        return self.path

    @property
    def parameters_human(self) -> str:
        n = self.parameters
        return f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.0f}M"

    @property
    def kind(self) -> str:
        return "chat" if self.chat_template else "base"

    def summary(self, long: bool = False) -> str:
        if not long:
            return f"{self.parameters_human} · {self.kind}"
        size = _size(self.file_size)
        return (
            f"{self.architecture} · {self.parameters_human} · {self.quantization} · {self.kind}"
            f" · {self.context_length:,} ctx · {size}"
        )

    def rows(self) -> list[tuple[str, str]]:
        return [
            ("Name", self.name),
            ("Description", self.description),
            ("Architecture", self.architecture),
            ("Parameters", self.parameters_human),
            ("Quantization", self.quantization),
            ("Trained context", f"{self.context_length:,} tokens"),
            ("Kind", "chat (has a chat template)" if self.chat_template else "base (completion)"),
            ("File size", _size(self.file_size)),
            ("File", Path(self.path).name),
        ] + ([("Adapter", str(self.lora))] if self.lora else [])

    def placement(self, load: LoadSettings | None = None) -> dict[str, Any]:
        """Where the file would load now with ``load``
        (:func:`engine.models.hardware.placement`)."""
        from engine.models.hardware import ModelSettings, placement

        return placement(self.path, ModelSettings.of(load)).as_dict()

    def slots(self, load: LoadSettings | None = None) -> dict[str, Any]:
        """The sequences it would decode at once if loaded now with ``load``
        (:func:`engine.models.slots.decide`)."""
        from engine.models.hardware import ModelSettings
        from engine.models.slots import decide

        return decide(self.path, ModelSettings.of(load).resolved()).as_dict()

    def as_dict(self) -> dict[str, Any]:
        return super().as_dict() | {"parameters_human": self.parameters_human}
