#!/usr/bin/env bash
# deps.sh: installs the Debian 12 packages that building, testing and benchmarking roundtrim
# need, and only those that are missing; with nothing missing it changes nothing and needs no
# network. `make check` runs a quick `make bench` (PyTorch client, tcmalloc) to prove the
# harness, so the test command needs every package here.
#
# Usage: scripts/deps.sh
set -euo pipefail

packages=(
	build-essential   # cc, make
	pkg-config
	dpkg-dev          # make deb: dpkg-architecture (LIBDIR), dpkg-shlibdeps (Depends)
	mount             # make check-deb: the overlay it installs the package into
	libcriterion-dev  # unit and integration tests
	libjemalloc-dev   # tests and bench under jemalloc (libjemalloc2 comes with it)
	libunwind-dev     # and libunwind8: the stacks of ROUNDTRIM_SITES (dlopen'ed, never linked)
	binutils          # addr2line: report --sites names frames offline
	heaptrack         # bench figure 8: the reference that records every allocation
	time              # bench figure 8: /usr/bin/time, peak RSS of a run
	libjson-c-dev     # the command's and the tests' readers of the library's JSON
	python3-prometheus-client # the test that parses the Prometheus file with a real parser
	shellcheck        # lint of scripts/
	mandoc            # lint of man/roundtrim.7
	patch             # the test that applies `roundtrim patch --diff` with patch -p0
	python3           # tests that run a Python host
	gnuplot-nox       # bench and report plots
	python3-torch     # the Python client (end-to-end tests and bench)
	python3-numpy
	libgoogle-perftools4 # tcmalloc, the bench's reference allocator and its row's test
	libmimalloc2.0    # mimalloc, its row's test
	clang-14          # fuzz targets (make check, make fuzz) and make check-asan/-ubsan/-tsan
	libclang-rt-14-dev # libFuzzer and the sanitizer runtimes
	llvm-14           # llvm-symbolizer, for readable sanitizer reports
	clang-format      # make format
	libpython3.11-testsuite # CPython's regression tests, for make check-host
	libpython3.11     # a test program linked to libpython that never initializes Python
	libpython3.11-dev # Python.h: the test program that embeds Python (test/workloads/pyembed.c)
	util-linux        # setpriv and prlimit: the tests of privilege drops and task limits
	gosu              # the test of a container entrypoint that drops root (a static Go program)
	libseccomp-dev    # test/tools/noshare: the seccomp filter of a container runtime (no unshare)
	valgrind          # callgrind: the instruction counts of bench figure 10 and their test
)

usage() {
	echo "usage: scripts/deps.sh" >&2
	exit 2
}

for arg in "$@"; do
	case $arg in
	-h | --help) usage ;;
	*)
		echo "deps.sh: unknown argument: $arg" >&2
		usage
		;;
	esac
done

missing=()
for package in "${packages[@]}"; do
	# ${Status} is dpkg-query's field, not a shell variable.
	# shellcheck disable=SC2016
	status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
	if [[ $status != "install ok installed" ]]; then
		missing+=("$package")
	fi
done

if ((${#missing[@]} == 0)); then
	echo "deps.sh: all ${#packages[@]} packages are installed"
	exit 0
fi

# sudo resets the environment, so the variable travels inside the command through env.
as_root=(env DEBIAN_FRONTEND=noninteractive)
if ((EUID != 0)); then
	if ! command -v sudo >/dev/null; then
		echo "deps.sh: not root and no sudo; install as root: ${missing[*]}" >&2
		exit 1
	fi
	as_root=(sudo "${as_root[@]}")
fi

echo "deps.sh: installing ${missing[*]}"
"${as_root[@]}" apt-get update
"${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
