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

# ---- after a write path: gc, restore everything, compare with a control ----
# figures POOL: every dataset, snapshot and bookmark of POOL with its space
# figures, names relative to the pool, so two pools can be compared.
figures() {
	"$FERRY" list -H -p -r -t all -o name,type,used,referenced,logicalused,logicalreferenced,written "$1" |
		sed "s|^$1||"
}
# codecs POOL: the per-codec block table of pool status.
codecs() { "$FERRY" pool status "$1" | sed -n '/CODEC/,$p'; }
# after_check POOL CONTROL DESC: what every test of a write path ends with.
# Runs gc on both pools, then checks that POOL has the same datasets,
# snapshots and space figures as CONTROL (a pool that got the same data in
# one go), the same per-codec block table, and that every snapshot of POOL
# restores byte for byte (metadata included) identical to CONTROL's.
after_check() {
	_p=$1 _c=$2 _d=$3 _bad=0
	"$FERRY" gc "$_p" >/dev/null 2>"$T/err" || { _bad=1; diag "gc $_p: $(cat "$T/err")"; }
	"$FERRY" gc "$_c" >/dev/null 2>"$T/err" || { _bad=1; diag "gc $_c: $(cat "$T/err")"; }
	is "$(figures "$_p")" "$(figures "$_c")" "$_d: after gc, datasets, snapshots and space figures equal the control's"
	is "$(codecs "$_p")" "$(codecs "$_c")" "$_d: after gc, the stored blocks per codec equal the control's"
	_ns=0
	for _s in $("$FERRY" list -H -r -t snapshot -o name "$_p"); do
		_ns=$((_ns + 1))
		rm -rf "$T/ac-a" "$T/ac-b"
		if ! "$FERRY" restore "$_s" "$T/ac-a" 2>"$T/err"; then
			_bad=1; diag "restore $_s: $(cat "$T/err")"; continue
		fi
		if ! "$FERRY" restore "$_c${_s#"$_p"}" "$T/ac-b" 2>"$T/err"; then
			_bad=1; diag "restore of the control's ${_s#"$_p"}: $(cat "$T/err")"; continue
		fi
		"$FERRY_TOOLS/treecmp" "$T/ac-b" "$T/ac-a" >"$T/err" 2>&1 ||
			{ _bad=1; diag "$_s differs from the control: $(head -3 "$T/err")"; }
	done
	rm -rf "$T/ac-a" "$T/ac-b"
	is "$_bad" 0 "$_d: after gc, all $_ns snapshots restore identical to the control's"
}
