#!/usr/bin/env bash
# Build the one-folder medexam app with PyInstaller (packaging/dist/medexam/medexam) and, on
# Linux, what users install: packaging/dist/medexam_VERSION_ARCH.deb (with dpkg-deb) and
# packaging/dist/medexam-VERSION-linux-ARCH.tar.gz (the folder, for users without root).
#
# Runs from any directory. Uses the project's virtual environment (.venv at the repository
# root; set PYTHON to use another interpreter). Extra arguments go to PyInstaller, e.g.
#   packaging/build.sh --clean      # forget PyInstaller's cache first
#
# The GPU: on Linux the app is built with llama.cpp's Vulkan back end, which runs on any
# vendor's GPU and falls back to the CPU (MEDEXAM_GPU=vulkan, the default: scripts/setup.sh
# --gpu-path builds it once into a folder beside .venv's own, put first on PYTHONPATH; it
# needs libvulkan-dev, glslc and spirv-headers); MEDEXAM_GPU=cpu packages .venv's CPU build. Elsewhere .venv's own build is packaged (the
# Windows workflow builds it with Vulkan, macOS's has Metal).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")

python=${PYTHON:-}
gpu=${MEDEXAM_GPU:-}
lib=
if [[ -z $python && $(uname -s) == Linux ]]; then
    gpu=${gpu:-vulkan}
    if [[ $gpu != cpu ]]; then
        lib=$(MEDEXAM_GPU=$gpu "$root/scripts/setup.sh" --gpu-path)
    fi
fi
if [[ -z $python ]]; then
    for candidate in "$root/.venv/bin/python" "$root/.venv/Scripts/python.exe"; do
        if [[ -x $candidate ]]; then
            python=$candidate
            break
        fi
    done
fi
if [[ -z $python ]]; then
    echo "build.sh: no virtual environment at $root/.venv (create it, or set PYTHON)" >&2
    exit 1
fi
if ! "$python" -c "import PyInstaller" 2>/dev/null; then
    echo "build.sh: PyInstaller is missing; install it with: $python -m pip install -e '${root}[package]'" >&2
    exit 1
fi

start=$SECONDS
PYTHONPATH=${lib:+$lib${PYTHONPATH:+:}}${PYTHONPATH:-} "$python" -m PyInstaller \
    --noconfirm \
    --distpath "$here/dist" \
    --workpath "$here/build" \
    "$@" \
    "$here/medexam.spec"

app="$here/dist/medexam"
echo
echo "Built $app in $((SECONDS - start)) s ($(du -sh "$app" | cut -f1))."
"$app/medexam" --version
echo "llama.cpp back ends: $(find "$app" -path '*llama_cpp/lib/*' -name '*ggml-*' \
    ! -name '*ggml-base*' | sed 's/.*ggml-\([a-z]*\).*/\1/' | sort -u | tr '\n' ' ')"

if [[ $(uname -s) == Linux ]]; then
    version=$("$python" -c "import engine; print(engine.__version__)")
    arch=$(uname -m)
    tarball="$here/dist/medexam-$version-linux-$arch.tar.gz"
    tar -C "$here/dist" -czf "$tarball" medexam
    echo "Wrote $tarball ($(du -h "$tarball" | cut -f1))."
    if command -v dpkg-deb >/dev/null; then
        deb=$("$here/linux/make-deb.sh" "$app" "$here/build/medexam/icons" "$here/dist" "$version")
        echo "Wrote $deb ($(du -h "$deb" | cut -f1))."
    else
        echo "No dpkg-deb here: no .deb written."
    fi
    echo "Packaged in $((SECONDS - start)) s."
fi
