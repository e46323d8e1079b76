#!/usr/bin/env bash
# The device check for a machine with an NVIDIA GPU, in one go (about 10 minutes on 16
# cores): builds llama.cpp's CPU, Vulkan and CUDA variants from llama-cpp-python's source
# (the set-up's lean, portable flags; CUDA for this GPU's architecture only), runs
# scripts/gpu_checks.py with each GPU variant against the CPU one and the float32 reference
# made and probed with the CPU variant (every layer offloaded, the same letters but for near
# ties on MEDEXAM_CHECK_N questions, letter log-probabilities no further from float32 than
# MEDEXAM_CHECK_FACTOR times what the quantization moves, a generation that streams, stops
# and cancels) and prints one JSON line: per variant
# whether it built and passed, its decode tok/s and logprob items/s against the CPU build's,
# and what batching gains there (batching_NAME: bench/batching.py at
# MEDEXAM_CHECK_SLOTS slots, default 16, against 1, every layer on the GPU; the goal is
# gain_decode_16 >= 4; MEDEXAM_CHECK_SLOTS=0 leaves it out).
#
# Needs no network: cmake (>= 3.21), ninja or make and a C/C++ compiler; nvcc for CUDA, the
# Vulkan headers, loader and glslc (and the driver's Vulkan ICD) for Vulkan (a variant
# without them is reported as skipped); a Python with medexam's dependencies (PYTHON,
# default .venv/bin/python); llama-cpp-python's source (MEDEXAM_LLAMA_SRC, a folder or its
# .tar.gz; default: .whl/llama_cpp_python-$version.tar.gz, else `pip download`). No pip
# install: each variant's libraries go beside a copy of the llama_cpp package, on PYTHONPATH.
# MEDEXAM_CHECK_VARIANTS names the GPU variants to check (default: "vulkan cuda"); logs and
# probes stay in MEDEXAM_CHECK_DIR (default: a temporary folder, removed).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
cd "$root" || exit 1

version=0.3.36
budget=${MEDEXAM_CHECK_BUDGET:-570} # seconds for the whole check
python=${PYTHON:-$root/.venv/bin/python}
[[ -x $python ]] || python=$(command -v python3)
jobs=$(nproc)
lean=(-DLLAVA_BUILD=OFF "-DCMAKE_PROJECT_llama.cpp_INCLUDE=$root/scripts/llama_lean.cmake")
portable=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
work=${MEDEXAM_CHECK_DIR:-$(mktemp -d)}
[[ -n ${MEDEXAM_CHECK_DIR:-} ]] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
export MEDEXAM_HOME=$work/home
mkdir -p "$MEDEXAM_HOME"
generator=(-G Ninja)
command -v ninja >/dev/null || generator=()
questions=${MEDEXAM_CHECK_QUESTIONS:-$root/../shared/data/explaincpe/test.json}
[[ -f $questions ]] || questions=$root/engine/samples/explaincpe_sample.json
n=${MEDEXAM_CHECK_N:-20}
declare -A result=()

left() { local s=$((budget - SECONDS)); echo $((s > 1 ? s : 1)); }

source_tree() {
    local src=${MEDEXAM_LLAMA_SRC:-$root/.whl/llama_cpp_python-$version.tar.gz}
    if [[ ! -e $src ]]; then
        "$python" -m pip download -q --no-binary :all: --no-deps -d "$work" \
            "llama-cpp-python==$version" >&2 || return 1
        src=$work/llama_cpp_python-$version.tar.gz
    fi
    if [[ -d $src ]]; then
        echo "$src"
    else
        tar -xzf "$src" -C "$work" && echo "$work/llama_cpp_python-$version"
    fi
}

# build NAME FLAGS…: the variant's libraries beside a copy of the llama_cpp package, in
# $work/pkg-NAME; its build time in result[NAME_build_s], or why it failed in result[NAME].
build() {
    local name=$1 start=$SECONDS
    shift
    local out=$work/build-$name pkg=$work/pkg-$name
    if ! timeout "$(left)" cmake -S "$src" -B "$out" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
        "${lean[@]}" "${portable[@]}" "$@" >"$work/$name-configure.log" 2>&1; then
        result[$name]="configure failed: $(grep -m1 -i error "$work/$name-configure.log")"
        return 1
    fi
    if ! timeout "$(left)" cmake --build "$out" -j "$jobs" >"$work/$name-build.log" 2>&1; then
        result[$name]="build failed or ran out of time: $(grep -m1 -i 'error' "$work/$name-build.log" | cut -c1-200)"
        return 1
    fi
    mkdir -p "$pkg"
    cp -r "$src/llama_cpp" "$pkg/"
    rm -rf "$pkg/llama_cpp/lib"
    mkdir -p "$pkg/llama_cpp/lib"
    find "$out" -name 'lib*.so*' \( -type f -o -type l \) -exec cp -P {} "$pkg/llama_cpp/lib/" \;
    result[${name}_build_s]=$((SECONDS - start))
}

probe() { # probe NAME [--app]: scripts/gpu_checks.py probe with the variant NAME
    local name=$1
    shift
    PYTHONPATH=$work/pkg-$name:$root timeout "$(left)" "$python" scripts/gpu_checks.py probe \
        "$work/$name.json" --questions "$questions" --n "$n" "$@" >"$work/$name-probe.log" 2>&1
}

batching() { # batching NAME: bench/batching.py's last line with the variant NAME on its GPU
    local name=$1 slots=${MEDEXAM_CHECK_SLOTS:-16}
    [[ $slots -gt 1 ]] || return 0
    if PYTHONPATH=$work/pkg-$name:$root timeout "$(left)" "$python" bench/batching.py \
        --slots "$slots" --gpu-layers -1 --json >"$work/$name-batching.log" 2>&1; then
        result[batching_$name]=$(tail -1 "$work/$name-batching.log")
    else
        result[batching_$name]="failed or ran out of time: $(tail -1 "$work/$name-batching.log" | cut -c1-200)"
    fi
}

check() { # check NAME FLAGS…: build, probe and compare one GPU variant
    local name=$1
    shift
    build "$name" "$@" || return
    if ! probe "$name"; then
        result[$name]="probe failed: $(tail -1 "$work/$name-probe.log" | cut -c1-200)"
        return
    fi
    result[$name]=$(PYTHONPATH=$root "$python" scripts/gpu_checks.py compare "$work/cpu.json" \
        "$work/$name.json" --reference "$work/reference.json" \
        --factor "${MEDEXAM_CHECK_FACTOR:-1.5}" --json)
    batching "$name"
}

report() {
    local gpu
    gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)
    RESULTS=$(for k in "${!result[@]}"; do printf '%s\t%s\n' "$k" "${result[$k]}"; done) \
        "$python" - "$gpu" "$SECONDS" <<'EOF'
import json, os, sys
out = {"gpu": sys.argv[1], "seconds": int(sys.argv[2])}
for line in filter(None, os.environ["RESULTS"].split("\n")):
    key, _, value = line.partition("\t")
    try:
        out[key] = json.loads(value)
    except ValueError:
        out[key] = value
print(json.dumps(out, sort_keys=True))
EOF
}

if ! src=$(source_tree); then
    result[error]="no llama-cpp-python $version source (set MEDEXAM_LLAMA_SRC)"
    report
    exit 1
fi
if ! "$python" -c "import click, gguf, jinja2, numpy, diskcache" 2>/dev/null; then
    result[error]="$python lacks medexam's dependencies (set PYTHON)"
    report
    exit 1
fi

reference() { # the float32 reference, converted and probed with the CPU variant
    local run=(env "PYTHONPATH=$work/pkg-cpu:$root" timeout "$(left)" "$python" scripts/gpu_checks.py)
    {
        "${run[@]}" reference "$work/smollm2-f32.gguf" &&
            "${run[@]}" probe "$work/reference.json" --questions "$questions" --n "$n" \
                --model "$work/smollm2-f32.gguf" --exam-only
    } >"$work/reference-probe.log" 2>&1 || {
        result[reference]="failed: $(tail -1 "$work/reference-probe.log" | cut -c1-200)"
        return 1
    }
}

if build cpu && probe cpu && reference; then
    result[cpu]=$("$python" -c "import json, sys; p = json.load(open(sys.argv[1]))
print(json.dumps({'decode_tok_s': p['generation']['decode_tok_s'], 'logprob_items_s': p['exam']['items_s']}))" "$work/cpu.json")
    for variant in ${MEDEXAM_CHECK_VARIANTS:-vulkan cuda}; do
        case $variant in
        vulkan)
            if command -v glslc >/dev/null; then
                check vulkan -DGGML_VULKAN=on
            else
                result[vulkan]="skipped: no glslc (the Vulkan SDK or the glslc package)"
            fi
            ;;
        cuda)
            if command -v nvcc >/dev/null; then
                arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '.')
                check cuda -DGGML_CUDA=on "-DCMAKE_CUDA_ARCHITECTURES=${arch:-native}"
            else
                result[cuda]="skipped: no nvcc (the CUDA toolkit)"
            fi
            ;;
        *) result[$variant]="unknown variant (vulkan or cuda)" ;;
        esac
    done
elif [[ -z ${result[reference]:-} ]]; then
    result[cpu]=${result[cpu]:-"probe failed: $(tail -1 "$work/cpu-probe.log" 2>/dev/null)"}
fi
report
