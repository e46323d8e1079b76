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
# 2. scripts/gpu_checks.py converts the embedded model (SmolLM2, Q4_1) to float32 with
#    llama.cpp's own quantizer (ALL_F32: the same weights, each block dequantized) and runs
#    `exam run --method logprob` on N ExplainCPE questions with it on the CPU build: the
#    reference. It probes the quantized model on the CPU build and on the Vulkan one and holds
#    both to the reference. What the quantization moves is the CPU build's distance from it
#    (the mean difference of the letters' log-probabilities and the largest of their
#    probabilities); the Vulkan build passes within MEDEXAM_CHECK_FACTOR (default 1.5) times
#    that, with float32's letters but for near ties (float32's two most likely letters within
#    the quantization's largest probability move), every layer offloaded, a generation that
#    streams, stops and is cancelled when asked, and the app's Models screen naming the device.
#    When a check fails (or MEDEXAM_CHECK_SETTINGS=1), the exam runs again on the Vulkan build
#    under each switch of ggml's Vulkan arithmetic (f16, fusion, graph order, integer dot
#    products, one slot) on MEDEXAM_CHECK_SETTINGS_N questions (default 5), each held to the
#    reference; MEDEXAM_CHECK_SETTINGS=0 never.
#
# Measured on lavapipe (llvmpipe, Mesa 22.3.6, LLVM 15.0.6; GGML_VK_VISIBLE_DEVICES=0, 2 cores),
# 14 questions of ExplainCPE's test set, in nats of log-probability:
#   CPU build from float32 (the quantization)  mean 0.0671, largest 0.1741; probability
#                                               largest 0.0440; letters 9/14, the others
#                                               near ties (float32's gap 0.001 to 0.036)
#   Vulkan build from float32                   mean 0.0013, largest 0.0056; probability
#                                               largest 0.0007; letters 14/14
#   tolerance (1.5 x the quantization)          mean 0.1007; probability largest 0.0659
# The weights are the same in both files: what moves the CPU build is its arithmetic on Q4_1,
# which multiplies each block with the activations quantized to 8 bits (ggml's q8_1). lavapipe
# has no accelerated integer dot product, so ggml's Vulkan back end dequantizes Q4_1 and
# multiplies in float32, float32's own numbers. On the first 5 questions one slot (each
# question decoded alone), GGML_VK_DISABLE_FUSION and GGML_VK_DISABLE_GRAPH_OPTIMIZE give the
# same numbers to the 4th decimal (0.0012 from float32): of the switches, f16 alone moves it. The former check held the Vulkan build to the CPU build within 0.05 and
# failed on the 14 sample questions (13/14 letters, 0.0538): that difference is the CPU
# build's own. This script on them (MEDEXAM_CHECK_QUESTIONS=engine/samples/
# explaincpe_sample.json, MEDEXAM_CHECK_N=14) passes in 717 s: the CPU build sits 0.0736 from
# float32 (largest 0.2277; probability 0.0497; 13/14 letters), the Vulkan build 0.0012
# (0.0038; 0.0009; 14/14).
# With f16 arithmetic (GGML_VK_DISABLE_F16 unset; this script sets it on a software device,
# and ggml reads any value as set) the Vulkan build sits 0.0284 from float32 (largest 0.1066;
# probability 0.0189) on the first 5 test questions, where the CPU build sits 0.0543: f16
# moves it half as far as the quantization does.
# A GPU that quantizes activations as the CPU does (integer dot products, NVIDIA's MMQ) should
# move about as far as the CPU build, rounded otherwise (not measured here): hence 1.5.
#
# Environment: GGML_VK_VISIBLE_DEVICES (default 0: ggml skips CPU-type devices such as
# lavapipe unless named), MEDEXAM_CHECK_N (questions, default 20), MEDEXAM_CHECK_FACTOR,
# MEDEXAM_CHECK_SETTINGS, MEDEXAM_CHECK_SETTINGS_N, MEDEXAM_CHECK_QUESTIONS (an ExplainCPE JSON
# file), MEDEXAM_CHECK_VULKAN (the Vulkan build's folder; default: setup.sh's),
# MEDEXAM_CHECK_DIR (where the probes stay; default: a temporary folder, removed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PYTHONPATH=$root # this checkout's medexam, whichever .venv gives the rest

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
PYTHONPATH=$vulkan:$root .venv/bin/python "${probe[@]}" "$work/vulkan.json" --app
passed=1
PYTHONPATH=$vulkan:$root .venv/bin/python scripts/gpu_checks.py compare "$work/cpu.json" "$work/vulkan.json" \
  --reference "$work/reference.json" --factor "${MEDEXAM_CHECK_FACTOR:-1.5}" || passed=
settings=${MEDEXAM_CHECK_SETTINGS:-auto}
if [ "$settings" = 1 ] || { [ "$settings" = auto ] && [ -z "$passed" ]; }; then
  echo "medexam: the Vulkan build's exam under each switch of its arithmetic"
  PYTHONPATH=$vulkan:$root .venv/bin/python scripts/gpu_checks.py settings "$work/cpu.json" \
    "$work/reference.json" --questions "$questions" --n "${MEDEXAM_CHECK_SETTINGS_N:-5}"
fi
[ -n "$passed" ] || { echo "medexam: a Vulkan check failed ($((SECONDS - start)) s)"; exit 1; }
echo "medexam: the Vulkan checks passed in $((SECONDS - start)) s"
