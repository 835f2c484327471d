#!/usr/bin/env bash
# deps.sh: installs the Debian 12 packages that building and testing roundtrim need, and only
# those that are missing; with nothing missing it changes nothing and needs no network.
#
# Usage: scripts/deps.sh [--bench]
#   --bench  also the packages for `make bench` and the Python tests (python3-torch is large)
set -euo pipefail

packages=(
	build-essential   # cc, make
	pkg-config
	libcriterion-dev  # unit and integration tests
	libjemalloc-dev   # tests and bench under jemalloc (libjemalloc2 comes with it)
	libunwind-dev
	shellcheck        # lint of scripts/
	mandoc            # lint of man/roundtrim.7
	python3           # tests that run a Python host
	gnuplot-nox       # bench plots
)
bench_packages=(
	python3-torch
	python3-numpy
	libgoogle-perftools4 # tcmalloc
)

usage() {
	echo "usage: scripts/deps.sh [--bench]" >&2
	exit 2
}

for arg in "$@"; do
	case $arg in
	--bench) packages+=("${bench_packages[@]}") ;;
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
