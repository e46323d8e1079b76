#!/usr/bin/env bash
# Check what users install, offline, as a new user (a throw-away HOME):
#   packaging/check.sh [PACKAGE]
# PACKAGE is the .deb (default: the one in packaging/dist/), unpacked with `dpkg -x` into a
# temporary root and run from there, or an app executable (dist/medexam/medexam; where there
# is no dpkg, that is the default).
#
# It runs every activity of the installed app, for a model and for a person: the window's
# first start (offscreen), two windows at once on one database and every screen; the version,
# the model list, a generation in the model's child process and the GPU (with a Vulkan device
# and without any driver, where the app has the Vulkan back end); an exam question (jieba,
# ROUGE), French questions with BM25 and with dense retrieval (torch, MiniLM), a consultation;
# an HTML report, CSV/XLSX/JSON exports, review cards and an Anki deck, a small training of a
# French reader; the package's desktop entry and icons, and that the app folder is never
# written to. Every command runs without a network (an empty network namespace) and, where
# strace is installed, any connection it tries to a machine other than this one fails its
# check. Each check prints its result and the next one runs; the script exits 1 at the end
# if any failed. It prints the app's size, what its first start wrote, and the cold start
# times of `medexam --version` and of the window.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
check_start=$SECONDS

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
if [[ ! -e $package ]]; then
    echo "check.sh: no $package: build it first (packaging/build.sh)" >&2
    exit 1
fi

deb_check=
if [[ $package == *.deb ]]; then
    step "install $(basename "$package") into a temporary root (dpkg -x)"
    root=$work/root
    dpkg -x "$package" "$root"
    app=$root/usr/bin/medexam
    folder=$root/opt/medexam
    echo "package $(du -h "$package" | cut -f1); installed $(mib "$root") MiB"
    deb_check=yes
else
    app=$package
    folder=$(dirname "$package")
fi

# The package's own files: the command's link, the desktop entry, the icons.
package_files() {
    test -L "$app" && test -x "$app"
    local desktop=$root/usr/share/applications/medexam.desktop
    grep -qx "Exec=medexam gui" "$desktop"
    if command -v desktop-file-validate >/dev/null; then desktop-file-validate "$desktop"; fi
    test -s "$root/usr/share/icons/hicolor/scalable/apps/medexam.svg"
    find "$root/usr/share/icons/hicolor" -name medexam.png | sed 's|.*/hicolor/||' | sort | tr '\n' ' '
    echo
}

# A new user: empty home and data folder, no network, no desktop.
export HOME=$work/home
unset XDG_DATA_HOME XDG_CONFIG_HOME XDG_CACHE_HOME MEDEXAM_HOME MEDEXAM_DB MEDEXAM_CACHE
case $(uname -s) in  # Windows finds the data folder through its own API, not HOME
    MINGW* | MSYS* | CYGWIN*) export MEDEXAM_HOME=$HOME/AppData/Local/medexam ;;
esac
export QT_QPA_PLATFORM=offscreen
mkdir -p "$HOME"
touch "$work/started"
# No network: the app runs in a network namespace of its own where one can be made (Linux),
# under strace where it is installed, which logs every connection the app and its child
# processes try (outside_connections); elsewhere the model hub's client is told to stay
# offline. Any command that takes more than 15 minutes is stopped.
# The start times are measured without strace (timed).
connections=$work/connect.log
timed=("$app")
traced=(strace -f --seccomp-bpf -qq -e trace=connect -e signal=none -A -o "$connections" --)
if command -v strace >/dev/null && "${traced[@]}" true 2>/dev/null; then
    network="connections traced (strace)"
else
    traced=()
    network="connections not traced (no strace: apt-get install strace)"
fi
if unshare -rn true 2>/dev/null; then
    timed=(unshare -rn -- "$app")
    network="an empty network namespace, $network"
else
    export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
    network="the hub's client told to stay offline, $network"
fi
medexam=("${timed[@]:0:${#timed[@]}-1}" "${traced[@]}" "$app")
if command -v timeout >/dev/null; then medexam=(timeout 900 "${medexam[@]}"); fi
echo "(no network: $network)"

# The connections the app tried to another machine since the last check (a local socket or
# this machine's own address is not one).
outside_connections() {
    [[ -f $connections ]] || return 0
    grep -E 'connect\(.*sa_family=AF_INET6?' "$connections" \
        | grep -vE 'inet_addr\("127\.|inet_pton\(AF_INET6, "::1"|"::ffff:127\.' || true
}

# check NAME COMMAND...: runs COMMAND (a function or a command) with `set -e`, prints whether
# it passed and goes on; a connection to another machine fails it too.
passed=()
failed=()
check() {
    local name=$1 rc t0=$SECONDS outside
    shift
    step "$name"
    : >"$connections"
    set +e
    (set -e; "$@")
    rc=$?
    set -e
    outside=$(outside_connections)
    if [[ -n $outside ]]; then
        echo "$outside" | sed -n 1,5p >&2
        echo "the app tried to reach the network" >&2
        ((rc)) || rc=1
    fi
    if ((rc == 0)); then
        passed+=("$name")
        echo "-- passed ($((SECONDS - t0)) s)"
    else
        failed+=("$name")
        echo "-- FAILED (exit $rc, $((SECONDS - t0)) s)"
    fi
}

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
        echo "GPU: this app has no Vulkan back end (built with MEDEXAM_GPU=cpu?)"
        return
    fi
    local out
    echo "GPU: the first Vulkan device"
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
    echo "GPU: no Vulkan driver at all (the CPU)"
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

# -- the checks -------------------------------------------------------------------------------

version_check() {
    evict
    seconds "${timed[@]}" --version >"$work/version_cold"
    seconds "${timed[@]}" --version >"$work/version_warm"
    "${medexam[@]}" --version
    echo "cold $(<"$work/version_cold") s, warm $(<"$work/version_warm") s"
}

first_start() {
    evict
    MEDEXAM_STARTUP_TIMING=quit limited "${timed[@]}" gui 2>&1 | grep "window shown" >"$work/gui_cold"
    MEDEXAM_STARTUP_TIMING=quit limited "${timed[@]}" gui 2>&1 | grep "window shown" >"$work/gui_warm"
    echo "first: $(<"$work/gui_cold")"
    echo "again: $(<"$work/gui_warm")"
    local db
    db=$(find "$HOME" -name medexam.db | sed -n 1p)
    test -n "$db"
    grep -q "noteShown=true" "$(dirname "$db")/gui.ini"  # the first-run note was shown
    (cd "$(dirname "$db")" && find . | sort | tr '\n' ' ')
    echo
    du -sk "$(dirname "$db")" | cut -f1 >"$work/first_run_kib"
    echo "user data after the first start: $(<"$work/first_run_kib") KiB (in ${db#"$HOME"/})"
}

two_windows() {
    MEDEXAM_STARTUP_TIMING=quit limited "${medexam[@]}" gui 2>/dev/null &
    local first=$!
    MEDEXAM_STARTUP_TIMING=quit limited "${medexam[@]}" gui 2>/dev/null
    wait "$first"
    echo "both closed normally"
}

every_screen() {
    local screen out bad=0
    mkdir -p "$work/screens"
    for screen in exam consult french review results experiments compare train models; do
        printf '[window]\nscreen=%s\n[firstRun]\nnoteShown=true\n' "$screen" >"$work/screens/gui.ini"
        out=$(MEDEXAM_HOME=$work/screens MEDEXAM_STARTUP_TIMING=quit limited "${medexam[@]}" gui 2>&1) || bad=1
        if grep -qiE "traceback|error" <<<"$out" || ! grep -q "window shown" <<<"$out"; then
            echo "$screen: $out" >&2
            bad=1
        else
            echo "$screen: $(grep "window shown" <<<"$out")"
        fi
    done
    return $bad
}

# The run a command stored (its JSON's "run_id"), kept for the report and the exports.
stored_run() {
    local id
    id=$(grep -oE '"run_id": [0-9]+' "$1" | tail -n1 | grep -oE '[0-9]+$')
    test -n "$id"
    echo "$id" >>"$work/runs"
    grep -oE '"(status|n|accuracy|rougeL|hamming|emr|correct|turns)": [^,}]*' "$1" | sed -n 1,4p | tr '\n' ' '
    echo "(run $id)"
    grep -q '"status": "finished"' "$1"
}
# app_run ARGS...: the app's command, its JSON output kept for stored_run.
app_run() { "${medexam[@]}" "$@" >"$work/out.json"; stored_run "$work/out.json"; }
# person_run ACTIVITY ARGS... <ANSWERS: a person's session, typed; its run must be stored,
# finished.
person_run() {
    local activity=$1
    shift
    "${medexam[@]}" "$activity" "$@" >"$work/person.out" 2>&1
    tail -n3 "$work/person.out"
    "${medexam[@]}" runs list --activity "$activity" --filter person --limit 1 --json >"$work/out.json"
    local id
    id=$(grep -m1 -oE '"id": [0-9]+' "$work/out.json" | grep -oE '[0-9]+$')
    printf '"run_id": %s\n' "$id" >>"$work/out.json"
    stored_run "$work/out.json"
}

models_list() {
    "${medexam[@]}" models list --json | grep -E '"(name|path)"'
    "${medexam[@]}" models list --json | grep -qE '"path": "[^"]*models[\\/]+gemma-3-270m-q4_k_m.gguf"'
}

exam_model() { app_run exam run --limit 1 --max-tokens 32 --json; }
exam_person() { person_run exam take --limit 2 --in-order <<<$'A\nB\n'; }

french_bm25() {
    "${medexam[@]}" french sample --json >/dev/null
    "${medexam[@]}" french index --corpus french-sample --retriever bm25 --json | grep -E '"(retriever|n_passages)"'
    app_run french run --dataset frenchmedmcqa-sample --index french-sample-bm25 -k 1 --limit 1 --json
}

french_dense() {
    "${medexam[@]}" french sample --json >/dev/null
    "${medexam[@]}" french index --corpus french-sample --retriever hybrid --json | grep -E '"(retriever|n_passages|build_s)"'
    "${medexam[@]}" french search --index french-sample-hybrid --query "effets indésirables" -k 1 --json \
        | grep -E '"(passage_id|score)"'
    app_run french run --dataset frenchmedmcqa-sample --index french-sample-hybrid -k 1 --limit 1 \
        --json
}

french_person() {
    person_run french take --dataset frenchmedmcqa-sample --limit 1 --in-order \
        --index french-sample-hybrid <<<$'A + B\n'
}

consult_model() {
    app_run consult run --doctor smollm2 --limit 1 --max-turns 1 --doctor-max-tokens 16 --json
}

consult_person() {
    person_run consult chat --case sample-01 --max-turns 1 <<<$'What is your age?\n/done\nb\n'
}

html_report() {
    local runs
    runs=$(sort -un "$work/runs" | tr '\n' ' ')
    test -n "$runs"
    # shellcheck disable=SC2086
    "${medexam[@]}" report $runs --out "$work/report.html"
    echo "runs $runs: $(grep -c "<svg" "$work/report.html") charts"
    grep -q "<svg" "$work/report.html"
}

exports() {
    local run
    for run in $(sort -un "$work/runs" | sed -n 1,2p); do
        "${medexam[@]}" runs export "$run" -o "$work/run-$run.csv"
        "${medexam[@]}" runs export "$run" -o "$work/run-$run.xlsx"
        "${medexam[@]}" runs export "$run" -o "$work/run-$run.json"
        test -s "$work/run-$run.csv" && test -s "$work/run-$run.xlsx" && test -s "$work/run-$run.json"
    done
    ls "$work" | grep -E '^run-[0-9]+\.' | tr '\n' ' '
    echo
}

review_cards() {
    "${medexam[@]}" review due --json | grep -E '"(due|n|activity)"' | sed -n 1,5p
    "${medexam[@]}" review stats --json >/dev/null
    "${medexam[@]}" review export-anki --out "$work/all.apkg" --json | grep -E '"(cards|notes)"'
    test -s "$work/all.apkg"
}

small_training() {
    "${medexam[@]}" french sample --json >/dev/null
    "${medexam[@]}" train french-reader --dataset frenchmedmcqa-sample --name check-reader \
        --retriever dense --corpus french-sample --epochs 1 --max-steps 2 --batch-size 2 \
        --max-length 64 --json | grep -E '"(status|error|step|loss)"' | sed -n 1,4p
    "${medexam[@]}" train list --json | grep -q '"status": "finished"'
    app_run french run --dataset frenchmedmcqa-sample --reader check-reader --limit 1 --json
}

database() {
    local db
    db=$(find "$HOME" -name medexam.db | sed -n 1p)
    "${medexam[@]}" runs list --json | grep -cE '"status": "finished"'
    if command -v sqlite3 >/dev/null; then sqlite3 "$db" "PRAGMA integrity_check"; fi
}

app_folder_untouched() {
    local written
    written=$(find "$folder" -newer "$work/started" | sed -n 1,5p)
    if [[ -n $written ]]; then
        echo "written in the app folder: $written" >&2
        return 1
    fi
    echo "nothing written under ${folder#"$work"/}"
    test "$(find "$HOME" -name '*.gguf' | wc -l)" -eq 0
    echo "no model file copied into the user's folders"
}

: >"$work/runs"
if [[ -n $deb_check ]]; then check "the package's command, desktop entry and icons" package_files; fi
check "cold and warm start of 'medexam --version'" version_check
check "first start of the desktop app (offscreen, the user's own database)" first_start
check "two windows at once on the same database" two_windows
check "every screen opens (Qt modules and plugins present)" every_screen
check "models list" models_list
check "generate (smollm2)" "${medexam[@]}" generate --prompt "Hi" --max-tokens 8 --json
check "GPU" gpu_check
check "exam: a model answers (jieba, ROUGE)" exam_model
check "exam: a person answers" exam_person
check "French: BM25 index and a model's run" french_bm25
check "French: dense retrieval (torch, sentence-transformers, MiniLM) and a model's run" french_dense
check "French: a person answers, with passages" french_person
check "consultation: a model doctor" consult_model
check "consultation: a person as the doctor" consult_person
check "an HTML report with its charts (matplotlib)" html_report
check "exports: CSV, XLSX, JSON" exports
check "review cards (FSRS) and an Anki deck" review_cards
check "a small training: a French reader on MiniLM, then its run" small_training
check "the database after all that" database
check "the app folder was never written to" app_folder_untouched

step "summary"
db=$(find "$HOME" -name medexam.db | sed -n 1p)
app_size=$(mib "$folder")
first_run_kib=$(cat "$work/first_run_kib" 2>/dev/null || echo 0)
after_kib=$( [[ -n $db ]] && du -sk "$(dirname "$db")" | cut -f1 || echo 0)
echo "app folder:               ${app_size} MiB"
echo "user data after 1st start: ${first_run_kib} KiB; after this check: ${after_kib} KiB"
echo "footprint after 1st start: $((app_size + first_run_kib / 1024)) MiB; after this check: $((app_size + after_kib / 1024)) MiB"
echo "medexam --version:        cold $(cat "$work/version_cold" 2>/dev/null) s, warm $(cat "$work/version_warm" 2>/dev/null) s"
echo "window (cold start):      $(cat "$work/gui_cold" 2>/dev/null)"
echo "window (warm start):      $(cat "$work/gui_warm" 2>/dev/null)"
echo "network:                  $network"
echo
echo "${#passed[@]} checks passed, ${#failed[@]} failed in $((SECONDS - check_start)) s"
if ((${#failed[@]})); then
    printf 'FAILED: %s\n' "${failed[@]}"
    echo "check failed"
    exit 1
fi
echo "check passed"
