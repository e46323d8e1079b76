#!/usr/bin/env bash
# Builds llama.cpp's llama-server once, from the llama.cpp sources vendored in the
# llama-cpp-python sdist of the installed version, with the project's portable flags, and
# keeps it in the user cache. Prints the binary's path. Used by bench/served.py.
#
# Environment:
#   MEDEXAM_LLAMA_CMAKE_ARGS  CMake flags (default: the portable CPU build of scripts/setup.sh)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-$root/.venv/bin/python}
version=$("$py" -c "import importlib.metadata as m; print(m.version('llama-cpp-python'))")
PORTABLE="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
CMAKE_FLAGS="${MEDEXAM_LLAMA_CMAKE_ARGS:-$PORTABLE} -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/medexam/llama-server/$version-$(echo "$CMAKE_FLAGS" | sha256sum | cut -c1-12)
if [ -x "$cache/llama-server" ]; then
  echo "$cache/llama-server"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "medexam: building llama-server from llama-cpp-python $version; this takes several minutes once" >&2
"$py" -m pip download -q --no-binary :all: --no-deps -d "$work" "llama-cpp-python==$version" >&2
tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
src=$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)
# shellcheck disable=SC2086  # the flags are words
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
  -DBUILD_SHARED_LIBS=OFF $CMAKE_FLAGS >&2
cmake --build "$work/build" --target llama-server -j "$(nproc)" >&2
mkdir -p "$cache"
cp "$work/build/bin/llama-server" "$cache/llama-server.part"
mv "$cache/llama-server.part" "$cache/llama-server"
echo "$cache/llama-server"
