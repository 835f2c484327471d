#!/usr/bin/env bash
# check-deb.sh: installs the package into a throwaway copy of this machine and proves it: dpkg -i;
# the library's file, SONAME, links and ld.so cache entry; pkg-config; a program built against
# roundtrim.h; a short frag run through the installed command (run, round --wait, status,
# report) with no ROUNDTRIM_LIB; patch; the Python module, byte-compiled, in a python3 with and
# without the library; then dpkg --purge and that nothing of it is left (byte code included).
#
# The copy is an overlay of / in a private mount namespace, its changes in a tmpfs, entered with
# chroot: this machine is not changed, and after the purge every file the overlay still holds
# must be dpkg's or ldconfig's state. Where no overlay can be mounted, it installs into this
# machine itself and purges at exit. Either way a roundtrim package installed already is refused.
# Needs root. `make check-deb` runs it.
#
# Usage: scripts/deb/check-deb.sh PACKAGE.deb FRAG
#   (internal) check-deb.sh --namespace DIR   the overlay, in the new mount namespace
#   (internal) check-deb.sh --inside DIR      the steps, in the system the package goes into
set -euo pipefail
shopt -s inherit_errexit
export LC_ALL=C
trap 'exit 143' TERM
trap 'exit 130' INT

ME=check-deb
# check-deb.sh --namespace exits so when the overlay cannot be made, before any change.
EXIT_NO_OVERLAY=3
STEP_TIMEOUT=60
# The package's command, not another one earlier in PATH.
ROUNDTRIM=/usr/bin/roundtrim

say() {
	echo "$ME: $*" >&2
}

die() {
	say "FAIL: $*"
	exit 1
}

# ---------------------------------------------------------------------------------------------
# The steps, in the system the package is installed into. DIR holds roundtrim.deb and frag.

installed() {
	[[ $(dpkg-query -W -f='${db:Status-Status}' roundtrim 2>/dev/null || true) == installed ]]
}

FRAG_PID=""
WORK=""
inside_cleanup() {
	if [[ -n $FRAG_PID ]]; then
		kill "$FRAG_PID" 2>/dev/null || true
		wait "$FRAG_PID" 2>/dev/null || true
	fi
	[[ -z $WORK ]] || rm -rf -- "$WORK"
	if installed; then
		say "purging the package after a failure"
		dpkg --purge roundtrim >/dev/null || true
	fi
}

# wait_for_file PATH: polls for PATH for up to STEP_TIMEOUT s.
wait_for_file() {
	local tries=$((STEP_TIMEOUT * 20))
	while [[ ! -e $1 ]]; do
		((tries-- > 0)) || return 1
		sleep 0.05
	done
}

check_library() {
	local libdir=$1 preload=$2 version=$3 multiarch cached
	multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)
	[[ $libdir == "/usr/lib/$multiarch" ]] || die "libdir is $libdir, not /usr/lib/$multiarch"
	[[ $preload == "$libdir/libroundtrim.so.0" ]] || die "preload is $preload"
	[[ -f $libdir/libroundtrim.so.$version && ! -L $libdir/libroundtrim.so.$version ]] ||
		die "no file $libdir/libroundtrim.so.$version"
	[[ $(readlink "$preload") == "libroundtrim.so.$version" ]] ||
		die "$preload does not link to libroundtrim.so.$version"
	[[ $(readlink "$libdir/libroundtrim.so") == libroundtrim.so.0 ]] ||
		die "$libdir/libroundtrim.so does not link to libroundtrim.so.0"
	readelf -d "$preload" | grep -q 'SONAME.*\[libroundtrim\.so\.0\]' ||
		die "SONAME is not libroundtrim.so.0"
	# With /lib a link to usr/lib, ld.so's cache may name either; a make install in /usr/local
	# may be there too.
	while IFS= read -r cached; do
		[[ $(readlink -f "$cached") == "$(readlink -f "$preload")" ]] && break
	done < <(ldconfig -p | sed -n 's/^[[:space:]]*libroundtrim\.so\.0 (.*) => //p')
	[[ -n ${cached:-} ]] ||
		die "libroundtrim.so.0 is not in ld.so's cache (the ldconfig trigger did not run)"
	say "library: $libdir/libroundtrim.so.$version, links libroundtrim.so.0 and" \
		"libroundtrim.so, in ld.so's cache"
}

check_api_program() {
	local version=$1 got
	cat >"$WORK/api.c" <<'EOF'
#include <roundtrim.h>
#include <stdio.h>
int main(void) { puts(roundtrim_version()); return 0; }
EOF
	# shellcheck disable=SC2046 # pkg-config prints several flags
	cc $(pkg-config --cflags roundtrim) -o "$WORK/api" "$WORK/api.c" $(pkg-config --libs roundtrim)
	got=$(env -u LD_PRELOAD ROUNDTRIM_FIFO=none "$WORK/api")
	[[ $got == "$version" ]] || die "a program linked with -lroundtrim printed '$got', not $version"
	say "a program built with pkg-config's flags runs and prints roundtrim_version() $got"
}

# A short frag run through the installed command, as `make demo` does: each round counted with
# `roundtrim round --wait`, which must answer with a glibc_release (the default action on glibc).
check_frag_run() {
	local frag=$1 real=$2 to from line answer r rounds=3
	mkfifo "$WORK/in" "$WORK/out"
	env -u ROUNDTRIM_LIB -u LD_PRELOAD "$ROUNDTRIM" run --fifo "$WORK/%p.fifo" \
		--stats "$WORK/%p.jsonl" --gc-rounds 1 -- "$frag" --threads 2 --mib 64 \
		--rounds "$rounds" --wait <"$WORK/in" >"$WORK/out" 2>"$WORK/err" &
	FRAG_PID=$!
	exec {to}>"$WORK/in" {from}<"$WORK/out"
	for ((r = 1; r <= rounds; r++)); do
		IFS= read -r -t "$STEP_TIMEOUT" -u "$from" line ||
			die "frag printed no round $r: $(tail -3 "$WORK/err")"
		wait_for_file "$WORK/$FRAG_PID.status" || die "no status file from the library"
		grep -q " $real\$" "/proc/$FRAG_PID/maps" || die "frag does not carry $real"
		answer=$("$ROUNDTRIM" round --wait --timeout "$STEP_TIMEOUT" "$FRAG_PID") ||
			die "roundtrim round failed: $answer"
		[[ $answer == "$FRAG_PID frag: round $r: glibc_release, RSS "* ]] ||
			die "unexpected answer: $answer"
		say "$line; $answer"
		if ((r == rounds)); then
			"$ROUNDTRIM" status "$FRAG_PID" >&2
		fi
		echo >&"$to"
	done
	exec {to}>&-
	wait "$FRAG_PID" || die "frag failed: $(tail -3 "$WORK/err")"
	FRAG_PID=""
	exec {from}<&-
	"$ROUNDTRIM" report "$WORK/"*.jsonl >"$WORK/report" || die "roundtrim report failed"
	grep -q '^1 process(es)' "$WORK/report" || die "unexpected report: $(cat "$WORK/report")"
	head -2 "$WORK/report" >&2
}

check_patch() {
	local preload=$1 launcher=$WORK/sub_start.sh expect
	printf '#!/usr/bin/env bash\npython3 -u -m nvflare.private.fed.app.client.client_train\n' \
		>"$launcher"
	env -u ROUNDTRIM_LIB "$ROUNDTRIM" patch --role client "$launcher"
	# The launcher expands it, not us.
	# shellcheck disable=SC2016
	expect='export LD_PRELOAD="'$preload'${LD_PRELOAD:+:$LD_PRELOAD}"'
	grep -qxF "$expect" "$launcher" || die "patch did not write $expect: $(cat "$launcher")"
	# Inside a patched launcher the command carries the SONAME link: it must start once again
	# without it, not forever.
	[[ $(env LD_PRELOAD="$preload" ROUNDTRIM_FIFO=none timeout 20 "$ROUNDTRIM" --version) == \
		"roundtrim "* ]] ||
		die "roundtrim with LD_PRELOAD=$preload did not answer --version"
	say "patch writes LD_PRELOAD=\"$preload...\"; the command runs with it in LD_PRELOAD"
}

# The module as the package installed it (python3 -I: no PYTHONPATH, no user site, no current
# directory), in a python3 that carries the library: round() is counted, the status it returns
# says so with the trigger "api" and an action; without the library: nothing, and one line saying why.
PY_MODULE_ROUND='
import time, roundtrim
assert roundtrim.__file__ == "/usr/lib/python3/dist-packages/roundtrim.py", roundtrim.__file__
assert roundtrim.round() is True
for _ in range(1200):  # 60 s, as wait_for_file
    status = roundtrim.status()
    if status and status["actions"] == 1:
        break
    time.sleep(0.05)
print(status["rounds"], status["last_trigger"], status["last_action"] != "none")
'
check_python_module() {
	local preload=$1 got
	[[ -x /usr/bin/python3 ]] || die "no /usr/bin/python3 (scripts/deps.sh installs it)"
	compgen -G '/usr/lib/python3/dist-packages/__pycache__/roundtrim.cpython-*.pyc' >/dev/null ||
		die "postinst did not byte-compile roundtrim.py"
	got=$(cd / && env LD_PRELOAD="$preload" ROUNDTRIM_FIFO="$WORK/%p.fifo" ROUNDTRIM_GC_ROUNDS=1 \
		timeout "$STEP_TIMEOUT" /usr/bin/python3 -I -c "$PY_MODULE_ROUND" 2>"$WORK/py-err") ||
		die "python3 with the library: $(cat "$WORK/py-err")"
	[[ $got == "1 api True" ]] || die "roundtrim.status() after round(): '$got'"
	got=$(cd / && env -u LD_PRELOAD timeout "$STEP_TIMEOUT" /usr/bin/python3 -I -c \
		'import roundtrim; print(roundtrim.round(), roundtrim.round(), roundtrim.status())' \
		2>"$WORK/py-err") || die "python3 without the library: $(cat "$WORK/py-err")"
	[[ $got == "False False None" && $(wc -l <"$WORK/py-err") == 1 ]] ||
		die "python3 without the library: '$got', stderr: $(cat "$WORK/py-err")"
	say "python3 imports roundtrim from the package: round() counted a round, acted on with" \
		"the trigger api; without the library: False, None and one warning"
}

check_purged() {
	local list=$1 path left=()
	installed && die "roundtrim is still installed after the purge"
	[[ -z $(dpkg-query -W -f='${db:Status-Abbrev}' roundtrim 2>/dev/null || true) ]] ||
		die "dpkg still knows roundtrim: $(dpkg-query -W -f='${db:Status-Abbrev}' roundtrim)"
	while IFS= read -r path; do
		if [[ -L $path || (-e $path && ! -d $path) ]]; then
			left+=("$path")
		fi
	done <"$list"
	for path in /usr/share/doc/roundtrim /var/lib/dpkg/info/roundtrim.*; do
		[[ ! -e $path ]] || left+=("$path")
	done
	((${#left[@]} == 0)) || die "left after the purge: ${left[*]}"
	! ldconfig -p | grep -q libroundtrim || die "libroundtrim is still in ld.so's cache"
	say "purged: none of its $(wc -l <"$list") paths is left, nor its ld.so cache entry"
}

inside() {
	local dir=$1 libdir preload version real
	trap inside_cleanup EXIT
	WORK=$(mktemp -d)
	# The package's roundtrim.pc, not one that make install put in /usr/local.
	PKG_CONFIG_LIBDIR=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)/pkgconfig
	export PKG_CONFIG_LIBDIR
	dpkg -i "$dir/roundtrim.deb"
	installed || die "dpkg -i did not install roundtrim"
	version=$(dpkg-query -W -f='${Version}' roundtrim)
	libdir=$(pkg-config --variable=libdir roundtrim)
	preload=$(pkg-config --variable=preload roundtrim)
	[[ $(pkg-config --modversion roundtrim) == "$version" ]] || die "roundtrim.pc's version differs"
	check_library "$libdir" "$preload" "$version"
	real=$libdir/libroundtrim.so.$version
	gzip -t /usr/share/man/man1/roundtrim.1.gz /usr/share/man/man7/roundtrim.7.gz
	[[ -f /usr/share/doc/roundtrim/copyright ]] || die "no copyright file"
	check_api_program "$version"
	check_frag_run "$dir/frag" "$real"
	check_patch "$preload"
	check_python_module "$preload"
	dpkg-query -L roundtrim | grep -v '^/\.$' >"$WORK/list"
	dpkg --purge roundtrim
	check_purged "$WORK/list"
}

# ---------------------------------------------------------------------------------------------
# The overlay: in a private mount namespace, so that every mount vanishes with it.

# Left in the overlay after the purge, and expected: dpkg's database and log, ldconfig's cache,
# man-db's index (its trigger ran for the man pages).
EXPECTED_LEFT='^(var/lib/dpkg/.*|var/log/dpkg\.log|etc/ld\.so\.cache|var/cache/ldconfig/aux-cache'
EXPECTED_LEFT+='|var/cache/man/.*)$'

namespace() {
	local dir=$1 layer=$1/layer root status=0 path kind left=()
	mkdir -p "$layer"
	mount -t tmpfs -o mode=0755 roundtrim-check-deb "$layer" || exit "$EXIT_NO_OVERLAY"
	mkdir "$layer/upper" "$layer/work" "$layer/root"
	root=$layer/root
	mount -t overlay overlay -o "lowerdir=/,upperdir=$layer/upper,workdir=$layer/work" "$root" ||
		exit "$EXIT_NO_OVERLAY"
	mount --rbind /proc "$root/proc"
	mount --rbind /dev "$root/dev"
	mount --bind "$dir/payload" "$root/mnt"
	say "installing into an overlay of / (this machine is not changed)"
	chroot "$root" /mnt/check-deb.sh --inside /mnt || status=$?
	((status == 0)) || exit "$status"
	# Every directory there must be one / has; every file, dpkg's or ldconfig's; a character
	# device is a whiteout: a file of / that was removed.
	while IFS= read -r -d '' path; do
		kind=$(stat -c %F "$layer/upper/$path")
		case $kind in
		directory) [[ -d /$path ]] || left+=("/$path/ (new directory)") ;;
		"character special file") left+=("/$path (removed from /)") ;;
		*) [[ $path =~ $EXPECTED_LEFT ]] || left+=("/$path") ;;
		esac
	done < <(cd "$layer/upper" && find . -mindepth 1 -printf '%P\0')
	((${#left[@]} == 0)) || die "the overlay holds, after the purge: ${left[*]}"
	say "the overlay holds nothing after the purge but dpkg's, ldconfig's and man-db's state"
}

# ---------------------------------------------------------------------------------------------

main() {
	(($# == 2)) || die "usage: check-deb.sh PACKAGE.deb FRAG"
	local deb=$1 frag=$2 dir status=0
	((EUID == 0)) || die "needs root (dpkg -i, mount, chroot)"
	[[ -f $deb ]] || die "$deb: no such package (make deb)"
	[[ -x $frag ]] || die "$frag: no such program (make)"
	dir=$(mktemp -d)
	# shellcheck disable=SC2064 # the path is fixed now
	trap "rm -rf -- '$dir'" EXIT
	mkdir "$dir/payload"
	cp -- "$deb" "$dir/payload/roundtrim.deb"
	cp -- "$frag" "$dir/payload/frag"
	cp -- "${BASH_SOURCE[0]}" "$dir/payload/check-deb.sh"
	# A clean start: what is there is no concern of the check, nor what it would remove.
	if installed; then
		die "the roundtrim package is installed on this machine: purge it first"
	fi
	if unshare -m true 2>/dev/null; then
		unshare -m --propagation private -- "$dir/payload/check-deb.sh" --namespace "$dir" ||
			status=$?
		if ((status != EXIT_NO_OVERLAY)); then
			((status == 0)) && say ok
			exit "$status"
		fi
	fi
	say "no overlay can be mounted: installing into this machine, purged at exit"
	"$dir/payload/check-deb.sh" --inside "$dir/payload"
	say ok
}

case ${1:-} in
--namespace) namespace "$2" ;;
--inside) inside "$2" ;;
*) main "$@" ;;
esac
