# common.sh: what every script of the project starts with; sourced, never run.
# Sets ROOT (the repository, also the working directory), BUILD_DIR, LIB, ROUNDTRIM (the command);
# defines die and note.
# shellcheck shell=bash
set -euo pipefail
# Without it, a failure inside $(...) would not stop the script.
shopt -s inherit_errexit
# sort -g and awk read and write numbers with a decimal point whatever the caller's locale.
export LC_ALL=C

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUILD_DIR=${BUILD:-build}
if [[ $BUILD_DIR != /* ]]; then
	BUILD_DIR=$ROOT/$BUILD_DIR
fi
# shellcheck disable=SC2034 # used by the scripts that source this file
LIB=$BUILD_DIR/libroundtrim.so
# shellcheck disable=SC2034 # the roundtrim command, built beside the library
ROUNDTRIM=$BUILD_DIR/roundtrim
SCRIPT_NAME=$(basename "$0")

die() {
	echo "$SCRIPT_NAME: $*" >&2
	exit 1
}

note() {
	echo "$SCRIPT_NAME: $*" >&2
}
