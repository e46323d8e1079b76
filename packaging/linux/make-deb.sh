#!/usr/bin/env bash
# Write a Debian package of the built app:
#   packaging/linux/make-deb.sh APP_DIR ICONS_DIR OUT_DIR VERSION
#
# APP_DIR is PyInstaller's one-folder app (dist/medexam), ICONS_DIR what packaging/icons.py
# wrote. The package installs
#   /opt/medexam/                       the app folder, as built (never written to at run time)
#   /usr/bin/medexam                    a relative link to /opt/medexam/medexam
#   /usr/share/applications/medexam.desktop
#   /usr/share/icons/hicolor/scalable/apps/medexam.svg and NxN/apps/medexam.png
# Every file belongs to the package, so `apt remove medexam` (or `dpkg -r medexam`) removes
# them all; the user's data folder (~/.local/share/medexam) is the user's and stays. The icon
# and menu caches are refreshed by the triggers of hicolor-icon-theme and desktop-file-utils,
# so the package needs no maintainer scripts.
set -euo pipefail

if [[ $# -ne 4 ]]; then
    echo "usage: $0 APP_DIR ICONS_DIR OUT_DIR VERSION" >&2
    exit 2
fi
app=$(cd "$1" && pwd)
icons=$(cd "$2" && pwd)
out=$3
version=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
arch=$(dpkg --print-architecture)
glibc=$(getconf GNU_LIBC_VERSION | cut -d' ' -f2)

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
chmod 755 "$root"

install -d "$root/opt" "$root/usr/bin" "$root/usr/share/applications" "$root/DEBIAN"
# Hard links where the file system allows (no copy of 1 GB), a copy elsewhere.
cp -al "$app" "$root/opt/medexam" 2>/dev/null || cp -a "$app" "$root/opt/medexam"
ln -s ../../opt/medexam/medexam "$root/usr/bin/medexam"
install -m 644 "$here/medexam.desktop" "$root/usr/share/applications/medexam.desktop"
install -D -m 644 "$here/../icons/medexam.svg" \
    "$root/usr/share/icons/hicolor/scalable/apps/medexam.svg"
for png in "$icons"/png/medexam-*.png; do
    size=$(basename "$png" .png)
    size=${size#medexam-}
    install -D -m 644 "$png" "$root/usr/share/icons/hicolor/${size}x${size}/apps/medexam.png"
done
install -D -m 644 /dev/stdin "$root/usr/share/doc/medexam/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: medexam
License: Apache-2.0
Comment: medexam bundles its Python libraries and embedded models with their own licences;
 their notices are in /opt/medexam/_internal.
EOF

installed_kb=$(du -sk --apparent-size "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<EOF
Package: medexam
Version: $version
Architecture: $arch
Maintainer: medexam <medexam@users.noreply.github.com>
Installed-Size: $installed_kb
Depends: libc6 (>= $glibc), libgl1, libegl1, libfontconfig1, libfreetype6, libglib2.0-0,
 libdbus-1-3, libx11-xcb1, libxkbcommon0, libxkbcommon-x11-0, libxcb-cursor0, libxcb-icccm4,
 libxcb-keysyms1, libxcb-shape0
Section: education
Priority: optional
Description: Offline medical exam practice and local language model evaluation
 medexam is a desktop app and a command line for pharmacist exam practice, consultations
 with a simulated patient and French medical questions with retrieved passages, for a
 person practising and for local language models under evaluation. Everything runs on this
 computer: the small models it needs ship inside the package.
EOF

mkdir -p "$out"
deb="$out/medexam_${version}_${arch}.deb"
# xz, the format every dpkg reads (zstd needs dpkg >= 1.21.18), at level 3: a few percent
# larger than the default level 6 on this content (the models hardly compress) and several
# times faster to build.
dpkg-deb --root-owner-group -Zxz -z3 --build "$root" "$deb" >/dev/null
echo "$deb"
