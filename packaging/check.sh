#!/usr/bin/env bash
# Smoke-test what users install, offline, as a new user (a throw-away HOME):
#   packaging/check.sh [PACKAGE]
# PACKAGE is the .deb (default: the one in packaging/dist/), unpacked with `dpkg -x` into a
# temporary root and run from there, or an app executable (dist/medexam/medexam; where there
# is no dpkg, that is the default). It runs the app's first start (the window, offscreen,
# then two windows at once on the same database), the version, the model list, a real
# generation in the model's child process, a dense (torch + MiniLM) index and search, one
# scored exam question (jieba, ROUGE), the GPU (with a Vulkan device and without any driver,
# where the app has the Vulkan back end); checks the package's desktop entry and icons and that
# the app folder is never written to; prints the app's size, what its first start wrote,
# and the cold start times of `medexam --version` and of the window.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

step() { echo; echo "== $*"; }
mib() { du -sm "$@" | tail -n1 | cut -f1; }

package=${1:-}
if [[ -z $package ]]; then
    if command -v dpkg-deb >/dev/null && compgen -G "$here/dist/medexam_*.deb" >/dev/null; then
        package=$(find "$here/dist" -maxdepth 1 -name 'medexam_*.deb' | sort | sed -n '$p')
    else
        package=$here/dist/medexam/medexam
        [[ -x $package ]] || package=$here/dist/medexam/medexam.exe
    fi
fi

if [[ $package == *.deb ]]; then
    step "install $(basename "$package") into a temporary root (dpkg -x)"
    root=$work/root
    dpkg -x "$package" "$root"
    app=$root/usr/bin/medexam
    folder=$root/opt/medexam
    test -L "$app" && test -x "$app"
    desktop=$root/usr/share/applications/medexam.desktop
    grep -qx "Exec=medexam gui" "$desktop"
    if command -v desktop-file-validate >/dev/null; then desktop-file-validate "$desktop"; fi
    test -s "$root/usr/share/icons/hicolor/scalable/apps/medexam.svg"
    find "$root/usr/share/icons/hicolor" -name medexam.png | sed 's|.*/hicolor/||' | sort | tr '\n' ' '
    echo
    echo "package $(du -h "$package" | cut -f1); installed $(mib "$root") MiB"
else
    app=$package
    folder=$(dirname "$package")
fi

# A new user: empty home and data folder, no network, no desktop.
export HOME=$work/home
unset XDG_DATA_HOME XDG_CONFIG_HOME XDG_CACHE_HOME MEDEXAM_HOME MEDEXAM_DB
case $(uname -s) in  # Windows finds the data folder through its own API, not HOME
    MINGW* | MSYS* | CYGWIN*) export MEDEXAM_HOME=$HOME/AppData/Local/medexam ;;
esac
export QT_QPA_PLATFORM=offscreen
mkdir -p "$HOME"
touch "$work/started"
# No network: the app runs in a network namespace of its own where one can be made (Linux);
# elsewhere the model hub's client is told to stay offline.
if unshare -rn true 2>/dev/null; then
    medexam=(unshare -rn -- "$app")
    echo "(no network: every command runs in an empty network namespace)"
else
    medexam=("$app")
    export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
fi

# Drop the app's files from the page cache (they were just written), so the first start
# reads them from disk; skipped where there is no Python.
evict() {
    local python
    python=$(command -v python3 || true)
    [[ -n $python ]] || return 0
    "$python" - "$folder" <<'EOF'
import os, sys
if not hasattr(os, "posix_fadvise"):
    sys.exit()
for base, _dirs, files in os.walk(sys.argv[1]):
    for name in files:
        path = os.path.join(base, name)
        if os.path.islink(path):
            continue
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        except OSError:
            pass
        finally:
            os.close(fd)
EOF
}
seconds() {
    local t0=$EPOCHREALTIME
    "$@" >/dev/null
    awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'
}
limited() { if command -v timeout >/dev/null; then timeout 120 "$@"; else "$@"; fi; }

# The GPU, where the app has llama.cpp's Vulkan back end: once on the first Vulkan device
# there is (on a machine without a GPU, Mesa's lavapipe, a software one, which ggml uses only
# when told to: GGML_VK_VISIBLE_DEVICES=0), where the model must be offloaded, and once with
# no Vulkan driver at all (the loader given none), where it must run on the CPU.
gpu_check() {
    if ! find "$folder" -path '*llama_cpp/lib/*' -name '*ggml-vulkan*' | grep -q .; then
        step "GPU: this app has no Vulkan back end (built with MEDEXAM_GPU=cpu?)"
        return
    fi
    local out
    step "GPU: the first Vulkan device"
    if ! compgen -G "/usr/share/vulkan/icd.d/*.json" >/dev/null; then
        echo "no Vulkan driver installed here (for a software one: mesa-vulkan-drivers): skipped"
    else
        out=$(GGML_VK_VISIBLE_DEVICES=${GGML_VK_VISIBLE_DEVICES:-0} GGML_VK_DISABLE_F16=1 \
            GGML_VK_DISABLE_COOPMAT=1 "${medexam[@]}" generate --prompt "Hi" --max-tokens 8 \
            --json 2>"$work/gpu.err")
        quiet "$work/gpu.err"
        echo "$out" | grep -E '"(text|device|gpu_layers|gpu_note)"'
        if echo "$out" | grep -qE '"gpu_layers": 0,|"device": "CPU"'; then
            echo "the model was not offloaded to the Vulkan device" >&2
            exit 1
        fi
    fi
    step "GPU: no Vulkan driver at all (the CPU)"
    out=$(VK_DRIVER_FILES=$work/none.json VK_ICD_FILENAMES=$work/none.json \
        "${medexam[@]}" generate --prompt "Hi" --max-tokens 8 --json 2>"$work/gpu.err")
    quiet "$work/gpu.err"
    echo "$out" | grep -E '"(text|device|gpu_layers|gpu_note)"'
    echo "$out" | grep -q '"device": "CPU"'
    echo "$out" | grep -q 'Vulkan found no GPU driver here'
    VK_DRIVER_FILES=$work/none.json VK_ICD_FILENAMES=$work/none.json "${medexam[@]}" models gpu
}
# llama.cpp's own log of the devices it found stays out of the terminal.
quiet() {
    if grep -q "ggml_vulkan" "$1"; then
        cat "$1" >&2
        echo "llama.cpp's device log reached the terminal" >&2
        exit 1
    fi
}

step "cold and warm start of 'medexam --version'"
evict
version_cold=$(seconds "${medexam[@]}" --version)
version_warm=$(seconds "${medexam[@]}" --version)
"${medexam[@]}" --version
echo "cold ${version_cold} s, warm ${version_warm} s"

step "first start of the desktop app (offscreen, the user's own database)"
evict
gui_cold=$(MEDEXAM_STARTUP_TIMING=quit limited "${medexam[@]}" gui 2>&1 | grep "window shown")
gui_warm=$(MEDEXAM_STARTUP_TIMING=quit limited "${medexam[@]}" gui 2>&1 | grep "window shown")
echo "first: $gui_cold"
echo "again: $gui_warm"
db=$(find "$HOME" -name medexam.db | sed -n 1p)
test -n "$db"
data=$(dirname "$db")
grep -q "noteShown=true" "$data/gui.ini"  # the first-run note was shown
(cd "$data" && find . | sort | tr '\n' ' ')
echo
first_run=$(mib "$data")
first_run_kib=$(du -sk "$data" | cut -f1)
app_size=$(mib "$folder")
echo "user data after the first start: ${first_run_kib} KiB (in ${data#"$HOME"/})"

step "two windows at once on the same database"
MEDEXAM_STARTUP_TIMING=quit limited "${medexam[@]}" gui 2>/dev/null &
first=$!
MEDEXAM_STARTUP_TIMING=quit limited "${medexam[@]}" gui 2>/dev/null
wait "$first"
echo "both closed normally"

step "every screen opens (Qt modules and plugins present)"
mkdir -p "$work/screens"
for screen in exam consult french review results models; do
    printf '[window]\nscreen=%s\n[firstRun]\nnoteShown=true\n' "$screen" >"$work/screens/gui.ini"
    out=$(MEDEXAM_HOME=$work/screens MEDEXAM_STARTUP_TIMING=quit limited "${medexam[@]}" gui 2>&1)
    if grep -qiE "traceback|error" <<<"$out"; then
        echo "$out" >&2
        exit 1
    fi
    echo "$screen: $(grep "window shown" <<<"$out")"
done

step "models list"
"${medexam[@]}" models list --json | grep -E '"(name|path)"'
"${medexam[@]}" models list --json | grep -E '"path": "[^"]*models[\\/]+gemma-3-270m-q4_k_m.gguf"' >/dev/null
step "generate (smollm2)"
"${medexam[@]}" generate --prompt "Hi" --max-tokens 8 --json
gpu_check
step "dense retrieval (torch, sentence-transformers, MiniLM)"
"${medexam[@]}" french sample --json >/dev/null
"${medexam[@]}" french index --corpus french-sample --retriever hybrid --json | grep -E '"(retriever|n_passages|build_s)"'
"${medexam[@]}" french search --index french-sample-hybrid --query "effets indésirables" -k 1 --json \
    | grep -E '"(passage_id|score)"'
step "one exam question (jieba, ROUGE)"
"${medexam[@]}" exam run --limit 1 --max-tokens 32 --json | grep -E '"(rouge1|rougeL|status)"'
step "an HTML report with its charts (matplotlib)"
"${medexam[@]}" report 1 --out "$work/report.html"
grep -c "<svg" "$work/report.html"
step "the database after all that"
"${medexam[@]}" runs list --json | grep -cE '"status": "finished"'
if command -v sqlite3 >/dev/null; then sqlite3 "$data/medexam.db" "PRAGMA integrity_check"; fi

step "the app folder was never written to"
written=$(find "$folder" -newer "$work/started" | sed -n 1,5p)
if [[ -n $written ]]; then
    echo "written in the app folder: $written" >&2
    exit 1
fi
echo "nothing written under ${folder#"$work"/}"
gemma_copies=$(find "$HOME" -name '*.gguf' | wc -l)
test "$gemma_copies" -eq 0
echo "no model file copied into the user's folders"

step "summary"
echo "app folder:               ${app_size} MiB"
after_check=$(mib "$data")
echo "user data after 1st start: ${first_run_kib} KiB; after this check: $(du -sk "$data" | cut -f1) KiB"
echo "footprint after 1st start: $((app_size + first_run)) MiB; after this check: $((app_size + after_check)) MiB"
echo "medexam --version:        cold ${version_cold} s, warm ${version_warm} s"
echo "window (cold start):      ${gui_cold}"
echo "window (warm start):      ${gui_warm}"
echo; echo "check passed"
