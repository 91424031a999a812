#!/usr/bin/env bash
# Builds the Debian package of mrcached with dpkg-deb, installed the way Debian's memcached is:
#   /usr/bin/mrcached, /usr/bin/mrcache
#   /etc/mrcached.conf                    conffile, the format of Debian's /etc/memcached.conf
#   /lib/systemd/system/mrcached.service  starts the wrapper below with /etc/mrcached.conf
#   /usr/share/mrcached/scripts/systemd-mrcached-wrapper   the conf file -> mrcached's flags
#   /usr/lib/tmpfiles.d/mrcached.conf     /run/mrcached (and /run/memcached) for the pid file
#   /usr/share/doc/mrcached/              README.md, compatibility.md, copyright
# and maintainer scripts that create the "memcache" user when missing (as Debian's memcached does).
# The files besides the binaries are in packaging/debian/.
#
#   scripts/package-deb.sh [--no-build] [--bin-dir DIR] [--out DIR]
#     --no-build   use the release binaries already built (default: cargo build --release first)
#     --bin-dir    where mrcached and mrcache are (default: ${CARGO_TARGET_DIR:-target}/release)
#     --out        where the .deb goes (default: ${CARGO_TARGET_DIR:-target}/debian)
# The last line of output is the path of the .deb.
#
# Maintainer: DEBFULLNAME and DEBEMAIL, else the last commit's author.
# Version: the workspace's (Cargo). Architecture: dpkg --print-architecture. Depends: adduser (the
# postinst) and the binaries' shared libraries as dpkg-shlibdeps (dpkg-dev) computes them.
set -euo pipefail
cd "$(dirname "$0")/.."

target_dir="${CARGO_TARGET_DIR:-target}"
build=1
bin_dir=""
out_dir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --no-build) build=0 ;;
        --bin-dir) bin_dir="$2"; shift ;;
        --out) out_dir="$2"; shift ;;
        *) echo "usage: $0 [--no-build] [--bin-dir DIR] [--out DIR]" >&2; exit 64 ;;
    esac
    shift
done
bin_dir="${bin_dir:-$target_dir/release}"
out_dir="${out_dir:-$target_dir/debian}"

for tool in dpkg-deb dpkg-shlibdeps; do
    command -v "$tool" >/dev/null || { echo "$0: $tool is missing (apt-get install dpkg-dev)" >&2; exit 1; }
done

if [ "$build" -eq 1 ]; then
    "${CARGO:-cargo}" build --release --locked -p mrcache-server -p mrcache-cli
fi
for bin in mrcached mrcache; do
    [ -x "$bin_dir/$bin" ] || { echo "$0: no $bin in $bin_dir (build it, or drop --no-build)" >&2; exit 1; }
done

version=$("${CARGO:-cargo}" pkgid --offline -p mrcache-server | sed 's/.*[#@]//')
arch=$(dpkg --print-architecture)
mkdir -p "$out_dir"
deb="$out_dir/mrcached_${version}_${arch}.deb"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/mrcached"
src=packaging/debian
install -d "$root/DEBIAN" "$root/usr/bin" "$root/etc" "$root/lib/systemd/system" \
    "$root/usr/share/mrcached/scripts" "$root/usr/lib/tmpfiles.d" "$root/usr/share/doc/mrcached"
# The release profile keeps line tables (debug = 1) for profiling; the package does not need them.
for bin in mrcached mrcache; do
    strip --strip-debug -o "$root/usr/bin/$bin" "$bin_dir/$bin"
    chmod 755 "$root/usr/bin/$bin"
done
install -m 644 "$src/mrcached.conf" "$root/etc/mrcached.conf"
install -m 644 "$src/mrcached.service" "$root/lib/systemd/system/mrcached.service"
install -m 755 "$src/systemd-mrcached-wrapper" "$root/usr/share/mrcached/scripts/"
install -m 644 "$src/mrcached.tmpfiles" "$root/usr/lib/tmpfiles.d/mrcached.conf"
install -m 644 README.md docs/compatibility.md docs/operating.md docs/choosing.md \
    docs/performance.md "$root/usr/share/doc/mrcached/"
license=$(sed -n 's/^license *= *"\(.*\)"/\1/p' Cargo.toml | head -n 1)
printf 'mrcached %s\nLicense: %s\n' "$version" "$license" >"$root/usr/share/doc/mrcached/copyright"
for script in postinst prerm postrm; do
    install -m 755 "$src/$script" "$root/DEBIAN/$script"
done
echo /etc/mrcached.conf >"$root/DEBIAN/conffiles"

# dpkg-shlibdeps reads debian/control from the directory it runs in.
mkdir -p "$stage/debian"
touch "$stage/debian/control"
shlibs=$(cd "$stage" && dpkg-shlibdeps -O mrcached/usr/bin/mrcached mrcached/usr/bin/mrcache 2>/dev/null |
    sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "$0: dpkg-shlibdeps found no shared libraries" >&2; exit 1; }
# DEBFULLNAME/DEBEMAIL as Debian's tools read them, else the author of the commit built.
if [ -n "${DEBEMAIL:-}" ]; then
    maintainer="${DEBFULLNAME:-mrcache maintainers} <$DEBEMAIL>"
else
    maintainer=$(git log -1 --format='%an <%ae>' 2>/dev/null || echo 'mrcache maintainers <root@localhost>')
fi
installed_kib=$(du -sk --exclude=DEBIAN "$root" | cut -f1)

cat >"$root/DEBIAN/control" <<CONTROL
Package: mrcached
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_kib
Depends: adduser, $shlibs
Section: web
Priority: optional
Description: memcached-compatible cache server that divides memory by miss-ratio curves
 mrcached is a drop-in replacement for memcached 1.6.18: the same text, meta and
 binary protocols, command-line flags and clients. It measures the miss-ratio curve
 of its own traffic and moves memory between slab classes (and tenants) where it
 saves the most misses. /etc/mrcached.conf takes the format of Debian's
 /etc/memcached.conf. Also contains mrcache, the companion tool (simulate traces,
 draw miss-ratio curves, plan cache sizes, generate load).
CONTROL

dpkg-deb --root-owner-group --build "$root" "$deb" >/dev/null
echo "$deb"
