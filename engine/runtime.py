"""The local GGUF model, by its former address: :mod:`engine.models.local` (the caller's
side), :mod:`engine.models.worker` (the model process) and :mod:`engine.models.hardware`."""

from engine.models.hardware import (
    ModelSettings,
    available_cores,
    gpu_offload_supported,
    physical_cores,
)
from engine.models.local import LocalModel, Stream
from engine.models.protocol import Generation, Message, ModelCrashed, ModelError
from engine.models.worker import BLOCK

__all__ = [
    "BLOCK",
    "Generation",
    "LocalModel",
    "Message",
    "ModelCrashed",
    "ModelError",
    "ModelSettings",
    "Stream",
    "available_cores",
    "gpu_offload_supported",
    "physical_cores",
]
