#!/usr/bin/env bash
# Checks medexam on a real Vulkan device: by default the first one, which on a machine
# without a GPU is Mesa's lavapipe (a conformant software Vulkan driver, package
# mesa-vulkan-drivers). Not part of .ci/run: the Vulkan build takes long (once).
#
# 1. MEDEXAM_GPU=vulkan scripts/setup.sh --gpu-path sets up .venv (the CPU build) and builds
#    llama-cpp-python's Vulkan variant once (needs libvulkan-dev, glslc and spirv-headers)
#    into a folder of its own, put first on PYTHONPATH (.venv gives everything else). ggml needs Vulkan
#    headers >= 1.3.272 (it uses VK_EXT_layer_settings: vk::LayerSettingEXT…); older system
#    headers (Debian 12 has 1.3.239) give way to Debian 13's libvulkan-dev headers, downloaded
#    once with apt-get into the user's cache (nothing is installed), or to VULKAN_SDK's.
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

vulkan=${MEDEXAM_CHECK_VULKAN:-$(MEDEXAM_GPU=vulkan "$root/scripts/setup.sh" --gpu-path)}

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
echo "medexam: the float32 reference, on the CPU build"
.venv/bin/python scripts/gpu_checks.py reference "$work/smollm2-f32.gguf" >/dev/null
probe=(scripts/gpu_checks.py probe --questions "$questions" --n "$n" --decode-tokens 32)
.venv/bin/python "${probe[@]}" "$work/reference.json" --model "$work/smollm2-f32.gguf" --exam-only
echo "medexam: probing the CPU build"
.venv/bin/python "${probe[@]}" "$work/cpu.json"
echo "medexam: probing the Vulkan build"
PYTHONPATH=$vulkan .venv/bin/python "${probe[@]}" "$work/vulkan.json" --app
passed=1
PYTHONPATH=$vulkan .venv/bin/python scripts/gpu_checks.py compare "$work/cpu.json" "$work/vulkan.json" \
  --reference "$work/reference.json" --factor "${MEDEXAM_CHECK_FACTOR:-1.5}" || passed=
settings=${MEDEXAM_CHECK_SETTINGS:-auto}
if [ "$settings" = 1 ] || { [ "$settings" = auto ] && [ -z "$passed" ]; }; then
  echo "medexam: the Vulkan build's exam under each switch of its arithmetic"
  PYTHONPATH=$vulkan .venv/bin/python scripts/gpu_checks.py settings "$work/cpu.json" \
    "$work/reference.json" --questions "$questions" --n "$n"
fi
[ -n "$passed" ] || { echo "medexam: a Vulkan check failed ($((SECONDS - start)) s)"; exit 1; }
echo "medexam: the Vulkan checks passed in $((SECONDS - start)) s"
