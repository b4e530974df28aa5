# tests/cli/lib.sh — sourced by every TAP script: a fresh temp dir with its
# own FERRY_HOME, and tiny TAP helpers. Run by `prove` from `make check`, or
# alone: FERRY=build/ferry tests/cli/NN-name.t
set -u
FERRY_SRC=${FERRY_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
FERRY=${FERRY:-$FERRY_SRC/build/ferry}
FERRY_TOOLS=${FERRY_TOOLS:-$FERRY_SRC/build/tools}
T=$(mktemp -d "${TMPDIR:-/tmp}/ferry-test.XXXXXX")
trap 'chmod -R u+rwX "$T" 2>/dev/null; rm -rf "$T"' EXIT
export FERRY_HOME="$T/home"
cd "$T" || exit 1
_n=0
_fails=0

ferry() { "$FERRY" "$@"; }
ok() { _n=$((_n + 1)); echo "ok $_n - $*"; }
not_ok() { _n=$((_n + 1)); _fails=$((_fails + 1)); echo "not ok $_n - $*"; }
diag() { printf '%s\n' "$@" | sed 's/^/# /'; }
# run CMD...: runs it with stdout in $T/out, stderr in $T/err, status in $rc.
run() { "$@" >"$T/out" 2>"$T/err"; rc=$?; }
# is GOT WANT DESC
is() {
	if [ "$1" = "$2" ]; then ok "$3"; else
		not_ok "$3"; diag "got:  $1" "want: $2"; fi
}
# like GOT REGEX DESC (grep -E)
like() {
	if printf '%s\n' "$1" | grep -Eq -- "$2"; then ok "$3"; else
		not_ok "$3"; diag "got:  $1" "want: /$2/"; fi
}
# refused RC_WANT ERR_REGEX DESC CMD...: the command fails with that exit
# code and exactly one stderr line matching ERR_REGEX.
refused() {
	_want=$1 _re=$2 _desc=$3; shift 3
	run "$@"
	_lines=$(wc -l <"$T/err")
	if [ "$rc" = "$_want" ] && [ "$_lines" = 1 ] && grep -Eq -- "$_re" "$T/err"; then
		ok "$_desc"
	else
		not_ok "$_desc"; diag "rc=$rc (want $_want), stderr:" "$(cat "$T/err")"
	fi
}
done_testing() { echo "1..$_n"; [ "$_fails" -eq 0 ]; }
