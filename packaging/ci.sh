#!/usr/bin/env bash
# Build the app as users install it, for the CPU (MEDEXAM_GPU=cpu: no Vulkan headers needed),
# and check it offline with packaging/check.sh: what .ci/run does before the test suite, so
# that a change that breaks the installed app (a library left out of the spec, a file a
# library reads at run time) fails CI.
#
# Sets up .venv and PyInstaller (the package extra) when missing, and strace for the check's
# connection tracing (scripts/system_libs.sh --package: installed when run as root). The
# build's own output goes to packaging/build/build.log (its last lines are printed when it
# fails); the check's is printed. Prints the time each part took; exits 1 if either failed.
# A passing build's files are removed afterwards (build.log stays).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")
start=$SECONDS

"$root/scripts/setup.sh"
python=$root/.venv/bin/python
if ! "$python" -c "import PyInstaller" 2>/dev/null; then
    echo "ci.sh: installing PyInstaller (the package extra)"
    "$python" -m pip --disable-pip-version-check -q install -e "${root}[package]"
fi
"$root/scripts/system_libs.sh" --package || true

mkdir -p "$here/build"
log=$here/build/build.log
echo "ci.sh: building the CPU app (packaging/build.sh, its output in ${log#"$root"/})"
built=$SECONDS
if ! MEDEXAM_GPU=cpu "$here/build.sh" >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "ci.sh: the build failed after $((SECONDS - built)) s"
    exit 1
fi
grep -E '^(Built|Wrote|Packaged)' "$log"
build_s=$((SECONDS - built))

checked=$SECONDS
status=0
"$here/check.sh" || status=$?
echo "ci.sh: set-up $((built - start)) s, build ${build_s} s, check $((SECONDS - checked)) s"
# What a passing build wrote (some 4 GB: the app, its .deb and .tar.gz, PyInstaller's work
# files) goes; a failing one's stays, to look into.
if ((status == 0)); then
    rm -rf "$here/dist" "$here/build/medexam"
fi
exit "$status"
