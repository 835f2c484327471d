#!/usr/bin/env bash
# build-deb.sh: turns the tree that `make install PREFIX=/usr DESTDIR=STAGE/debian/roundtrim`
# wrote into a Debian binary package with dpkg-deb alone (no debhelper): strips the ELF files,
# gzips the man pages, adds /usr/share/doc/roundtrim, takes Depends from dpkg-shlibdeps, and
# writes DEBIAN/control, shlibs, triggers and md5sums, with postinst and prerm, which byte-compile
# the Python module and remove its byte code. `make deb` runs it.
#
# Usage: scripts/deb/build-deb.sh STAGE OUT.deb VERSION ARCH SONAME
set -euo pipefail
shopt -s inherit_errexit
export LC_ALL=C

die() {
	echo "build-deb.sh: $*" >&2
	exit 1
}

(($# == 5)) || die "usage: build-deb.sh STAGE OUT.deb VERSION ARCH SONAME"
stage=$1 out=$2 version=$3 arch=$4 soname=$5
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
root=$stage/debian/roundtrim
doc=$root/usr/share/doc/roundtrim
[[ -n $arch ]] || die "no architecture (dpkg --print-architecture failed)"
mapfile -t sonames < <(find "$root" -name "$soname" -type l)
((${#sonames[@]} == 1)) || die "expected one $soname link under $root, found ${#sonames[@]}"
preload=${sonames[0]#"$root"}

# Two builds of one commit give the same package: every date is the commit's.
if [[ -z ${SOURCE_DATE_EPOCH:-} ]]; then
	SOURCE_DATE_EPOCH=$(git -C "$top" log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH

# The ELF files, stripped as dh_strip does (debug symbols stay in the build tree).
elf=()
while IFS= read -r -d '' file; do
	if cmp -s -n 4 "$file" <(printf '\177ELF'); then
		elf+=("$file")
	fi
done < <(find "$root" -type f -print0 | sort -z)
((${#elf[@]})) || die "no ELF file under $root"
for file in "${elf[@]}"; do
	case $file in
	*.so | *.so.*) strip --remove-section=.comment --remove-section=.note --strip-unneeded "$file" ;;
	*) strip --remove-section=.comment --remove-section=.note "$file" ;;
	esac
done

find "$root/usr/share/man" -type f -name '*.[1-9]' -exec gzip -9n {} +

install -d "$doc"
install -m 0644 "$top/README.md" "$doc/README.md"
gzip -9n "$doc/README.md"
install -m 0644 "$here/copyright" "$doc/copyright"
install -D -m 0644 "$here/lintian-overrides" "$root/usr/share/lintian/overrides/roundtrim"
template=$(<"$here/control.in")
maintainer=$(sed -n 's/^Maintainer: //p' <<<"$template")
commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)
# A native package: its one changelog is changelog.gz.
{
	printf 'roundtrim (%s) unstable; urgency=medium\n\n' "$version"
	printf '  * Release %s, built from commit %s.\n\n' "$version" "$commit"
	printf ' -- %s  %s\n' "$maintainer" "$(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n >"$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"

find "$root" -type d -exec chmod 0755 {} +
find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

# Depends: the shared libraries the ELF files need, at the versions their symbols need, from
# the libc6 symbols file. dpkg-shlibdeps reads debian/control for the package's name only, and
# finds the package's root by its DEBIAN directory.
install -d -m 0755 "$root/DEBIAN"
printf 'Source: roundtrim\n\nPackage: roundtrim\nArchitecture: any\n' >"$stage/debian/control"
depends=$(cd "$stage" && dpkg-shlibdeps -O "${elf[@]#"$stage/"}")
depends=${depends#shlibs:Depends=}
[[ $depends == *libc6* ]] || die "dpkg-shlibdeps found no libc6 dependency: '$depends'"
# As dpkg-gencontrol counts: each file's KiB rounded up, 1 for anything else.
installed_size=$(find "$root" -mindepth 1 -path "$root/DEBIAN" -prune -o -printf '%y %s\n' |
	awk '{ n += $1 == "f" ? int(($2 + 1023) / 1024) : 1 } END { print n }')

control=${template//@VERSION@/$version}
control=${control//@ARCH@/$arch}
control=${control//@INSTALLED_SIZE@/$installed_size}
control=${control//@DEPENDS@/$depends}
control=${control//@PRELOAD@/$preload}
if [[ $control =~ @[A-Z_]+@ ]]; then
	die "control.in: placeholder ${BASH_REMATCH[0]} left"
fi
printf '%s\n' "$control" >"$root/DEBIAN/control"
# Programs linked with -lroundtrim depend on a package at least this new.
printf 'libroundtrim %s roundtrim (>= %s)\n' "${soname#libroundtrim.so.}" "$version" \
	>"$root/DEBIAN/shlibs"
# libc-bin runs ldconfig once at the end of the dpkg run: the SONAME enters ld.so's cache.
printf 'activate-noawait ldconfig\n' >"$root/DEBIAN/triggers"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
	xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/"*
install -m 0755 "$here/postinst" "$here/prerm" "$root/DEBIAN/"
touch -h -d "@$SOURCE_DATE_EPOCH" "$root/DEBIAN" "$root/DEBIAN/"*

dpkg-deb --root-owner-group -Zxz --build "$root" "$out"
