#!/usr/bin/env bash
# Checks medexam on a real Vulkan device: by default the first one, which on a machine
# without a GPU is Mesa's lavapipe (a conformant software Vulkan driver, package
# mesa-vulkan-drivers). Not part of .ci/run: the Vulkan build takes long (once).
#
# 1. scripts/setup.sh makes .venv (the CPU build); MEDEXAM_GPU=vulkan scripts/setup.sh
#    --llama-wheel builds llama-cpp-python's Vulkan variant once into the wheel cache (needs
#    libvulkan-dev, glslc and spirv-headers), and it is installed into an environment of its
#    own that uses .venv for everything else. ggml needs Vulkan headers >= 1.3.272 (it uses
#    VK_EXT_layer_settings: vk::LayerSettingEXT…); older system headers (Debian 12 has
#    1.3.239) give way to Debian 13's libvulkan-dev headers, downloaded once with apt-get
#    into the user's cache (nothing is installed), or to VULKAN_SDK's when it is set.
# 2. scripts/gpu_checks.py probes the CPU build and the Vulkan one with the embedded model,
#    then compares: every layer offloaded to the Vulkan device, `exam run --method logprob`
#    on 20 ExplainCPE questions giving the probabilities of the CPU build
#    within MEDEXAM_CHECK_TOL (default 0.05; lavapipe gave 0.044 at most, 0.011 on average:
#    its kernels round otherwise than the CPU's) and the same letters but for near ties (the
#    CPU's two most likely letters within that tolerance), a generation that streams, stops
#    and is cancelled when asked, and the app's Models screen naming the device.
#
# Environment: GGML_VK_VISIBLE_DEVICES (default 0: ggml skips CPU-type devices such as
# lavapipe unless named), MEDEXAM_CHECK_N (questions, default 20), MEDEXAM_CHECK_TOL,
# MEDEXAM_CHECK_DIR (where the probes stay; default: a temporary folder, removed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

vulkan_headers() {
  local have
  have=$(sed -n 's/^#define VK_HEADER_VERSION \([0-9]*\)$/\1/p' /usr/include/vulkan/vulkan_core.h 2>/dev/null)
  if [ -n "${VULKAN_SDK:-}" ] || [ "${have:-0}" -ge 272 ]; then
    return
  fi
  local dir=${XDG_CACHE_HOME:-$HOME/.cache}/medexam/vulkan-headers
  if [ ! -f "$dir/usr/include/vulkan/vulkan.hpp" ]; then
    echo "medexam: the Vulkan headers here are 1.3.${have:-?}, ggml needs 1.3.272: taking Debian 13's"
    local apt=$dir.apt
    mkdir -p "$apt/parts" "$apt/lists/partial" "$apt/cache/archives/partial"
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      > "$apt/parts/trixie.sources"
    local opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt/parts"
      -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache")
    apt-get "${opts[@]}" -qq update
    (cd "$apt" && apt-get "${opts[@]}" -qq download libvulkan-dev/trixie 2>/dev/null)
    dpkg-deb -x "$apt"/libvulkan-dev_*.deb "$dir"
    rm -rf "$apt"
  fi
  export VULKAN_SDK=$dir/usr
}

"$root/scripts/setup.sh"
vulkan_headers
wheel=$(MEDEXAM_GPU=vulkan "$root/scripts/setup.sh" --llama-wheel)
env=${XDG_CACHE_HOME:-$HOME/.cache}/medexam/envs/$(basename "$(dirname "$wheel")")
if [ ! -f "$env/.medexam-ready" ]; then
  echo "medexam: making $env (the Vulkan build over .venv)"
  rm -rf "$env"
  base=$(.venv/bin/python -c "import sys; print(sys.base_prefix)")
  "$base/bin/python3" -m venv "$env"
  "$env/bin/python" -m pip --disable-pip-version-check -q install --no-deps "$wheel"
  site=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  own=$("$env/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  echo "import site; site.addsitedir('$site')" > "$own/zz-medexam-venv.pth"
  touch "$env/.medexam-ready"
fi

questions=${MEDEXAM_CHECK_QUESTIONS:-$root/../shared/data/explaincpe/test.json}
[ -f "$questions" ] || questions=$root/engine/samples/explaincpe_sample.json
n=${MEDEXAM_CHECK_N:-20}
work=${MEDEXAM_CHECK_DIR:-$(mktemp -d)}
[ -n "${MEDEXAM_CHECK_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
export MEDEXAM_HOME=$work/home  # no user setting (a forced CPU, say) changes what is checked
mkdir -p "$MEDEXAM_HOME"
export GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-0}
if vulkaninfo --summary 2>/dev/null | grep -q "PHYSICAL_DEVICE_TYPE_CPU"; then
  # A software device, as in llama.cpp's own CI: no f16 arithmetic, no cooperative matrices.
  export GGML_VK_DISABLE_F16=${GGML_VK_DISABLE_F16:-1} GGML_VK_DISABLE_COOPMAT=${GGML_VK_DISABLE_COOPMAT:-1}
fi

start=$SECONDS
echo "medexam: probing the CPU build"
probe=(scripts/gpu_checks.py probe --questions "$questions" --n "$n" --decode-tokens 32)
.venv/bin/python "${probe[@]}" "$work/cpu.json"
echo "medexam: probing the Vulkan build"
"$env/bin/python" "${probe[@]}" "$work/vulkan.json" --app
"$env/bin/python" scripts/gpu_checks.py compare "$work/cpu.json" "$work/vulkan.json" --tol "${MEDEXAM_CHECK_TOL:-0.05}"
echo "medexam: the Vulkan checks passed in $((SECONDS - start)) s"
