#!/usr/bin/env bash
# Checks the system libraries that Qt's xcb platform plugin (the app's window on Linux) needs,
# from the plugin's own missing libraries (ldd), and installs the missing ones with apt-get
# when run as root; otherwise prints the one command that installs them and exits 1.
#
#   scripts/system_libs.sh           before starting the app (scripts/run)
#   scripts/system_libs.sh --test    also Xvfb, for the test that opens the app on it
#                                    (scripts/test); never fails: the tests say what is missing
#   scripts/system_libs.sh --check   only says what is missing (exit 1), installs nothing
#   scripts/system_libs.sh --vulkan  instead, what llama.cpp's Vulkan build needs (the Vulkan
#                                    headers and loader, glslc, the SPIR-V headers; with
#                                    VULKAN_SDK set, its include/ and bin/ count), for
#                                    scripts/setup.sh; --vulkan --check installs nothing
#   scripts/system_libs.sh --package instead, what packaging/check.sh uses to see the app's
#                                    connections (strace), for packaging/ci.sh
# MEDEXAM_SYSTEM_LIBS=check makes any of them only say what is missing.
#
# Elsewhere than Linux there is nothing to do, nor for the app with QT_QPA_PLATFORM set to
# another platform.
# MEDEXAM_QT_PLUGIN names another plugin file to check, MEDEXAM_INCLUDE_DIR another folder of
# system headers than /usr/include (the tests use them).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-run}
install=yes
if [ "$mode" = --check ] || [ "${2:-}" = --check ] || [ "${MEDEXAM_SYSTEM_LIBS:-}" = check ]; then
  install=no
fi

[ "$(uname -s)" = Linux ] || exit 0

# The packages llama.cpp's Vulkan back end needs to build that are missing here.
vulkan_missing() {
  local sdk=${VULKAN_SDK:-} include=${MEDEXAM_INCLUDE_DIR:-/usr/include}
  header() { [ -f "$include/$1" ] || { [ -n "$sdk" ] && [ -f "$sdk/include/$1" ]; }; }
  header vulkan/vulkan_core.h || echo libvulkan-dev
  command -v glslc >/dev/null || { [ -n "$sdk" ] && [ -x "$sdk/bin/glslc" ]; } || echo glslc
  header spirv/unified1/spirv.hpp || echo spirv-headers
}

case ${QT_QPA_PLATFORM:-xcb} in
  xcb* | "") ;;
  *) [ "$mode" != run ] || exit 0 ;;
esac

# Debian's package of a shared library: its name in lower case, a dash when it ends in a
# digit, then its version (libxcb-cursor.so.0: libxcb-cursor0; libX11.so.6: libx11-6).
package_of() {
  local name=${1%%.so*} version=${1##*.so.}
  [ "$version" = "$1" ] && version=
  case $name in
    libglib-2.0 | libgthread-2.0 | libgobject-2.0 | libgio-2.0) echo libglib2.0-0 ;;
    libGLdispatch) echo libglvnd0 ;;
    libbrotli*) echo libbrotli1 ;;
    libz) echo zlib1g ;;
    libgcc_s) echo libgcc-s1 ;;
    *)
      name=$(printf '%s' "$name" | tr '[:upper:]' '[:lower:]')
      case $name in *[0-9]) name=$name- ;; esac
      echo "$name$version"
      ;;
  esac
}

plugin=${MEDEXAM_QT_PLUGIN:-$(ls "$root"/.venv/lib/python*/site-packages/PySide6/Qt/plugins/platforms/libqxcb.so 2>/dev/null | head -n 1)}

missing_libraries() {
  [ -n "$plugin" ] && [ -f "$plugin" ] && command -v ldd >/dev/null || return 0
  ldd "$plugin" 2>/dev/null | awk '$2 == "=>" && $3 == "not" {print $1}' | sort -u
}

packages=()
missing=
otherwise=
case $mode in
  --vulkan)
    read -r -a packages <<<"$(vulkan_missing | tr '\n' ' ')"
    what="the Vulkan build's headers and tools ($(echo "${packages[*]}" | sed 's/ /, /g'))"
    otherwise=" (or build for the CPU alone: MEDEXAM_GPU=cpu)"
    ;;
  --package)
    command -v strace >/dev/null || packages+=(strace)
    what="strace (packaging/check.sh traces the app's connections with it)"
    ;;
  *)
    missing=$(missing_libraries)
    for library in $missing; do
      packages+=("$(package_of "$library")")
    done
    if [ "$mode" = --test ] && ! command -v Xvfb >/dev/null; then
      packages+=(xvfb xauth)
    fi
    what=
    [ -n "$missing" ] && what="the libraries Qt's window needs ($(echo $missing | sed 's/ /, /g'))"
    [ "$mode" = --test ] && ! command -v Xvfb >/dev/null && what="${what:+$what and }Xvfb, for the tests"
    ;;
esac
[ ${#packages[@]} -eq 0 ] && exit 0

# Nothing missing any more (after apt-get).
complete() {
  case $mode in
    --vulkan) [ -z "$(vulkan_missing)" ] ;;
    --package) command -v strace >/dev/null ;;
    *) [ -z "$(missing_libraries)" ] && { [ "$mode" != --test ] || command -v Xvfb >/dev/null; } ;;
  esac
}

command="apt-get install -y ${packages[*]}"
if [ $install = yes ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "medexam: installing $what: $command" >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -qq --no-install-recommends "${packages[@]}" >&2; then
    apt-get update -qq >&2 && apt-get install -y -qq --no-install-recommends "${packages[@]}" >&2 || true
  fi
  complete && exit 0
  echo "medexam: apt-get could not install $what$otherwise" >&2
elif command -v apt-get >/dev/null; then
  sudo=$([ "$(id -u)" = 0 ] || echo "sudo ")
  echo "medexam: missing $what; install them with: $sudo$command$otherwise" >&2
else
  echo "medexam: missing $what; install them with the system's package manager$otherwise" >&2
fi
[ "$mode" = --test ] && exit 0
exit 1
