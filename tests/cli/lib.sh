# tests/cli/lib.sh — sourced by every TAP script: a fresh temp dir with its
# own FERRY_HOME, and tiny TAP helpers. Run by `prove` from `make check`, or
# alone: FERRY=build/ferry tests/cli/NN-name.t
set -u
FERRY_SRC=${FERRY_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
FERRY=${FERRY:-$FERRY_SRC/build/ferry}
FERRY_TOOLS=${FERRY_TOOLS:-$FERRY_SRC/build/tools}
T=$(mktemp -d "${TMPDIR:-/tmp}/ferry-test.XXXXXX")
# TS: scratch for trees that are restored or copied only to be compared
# (after_check's restores, a test's copies of its source trees), on tmpfs
# when there is one: creating tens of thousands of small files on a busy
# disk costs more than all the rest of a test. Pools stay in T.
TS=$(mktemp -d /dev/shm/ferry-scratch.XXXXXX 2>/dev/null) || { TS=$T/scratch; mkdir "$TS"; }
# lib_cleanup: removes T and TS; a test that sets its own EXIT trap calls it
lib_cleanup() { chmod -R u+rwX "$T" "$TS" 2>/dev/null; rm -rf "$T" "$TS"; }
trap lib_cleanup EXIT
export FERRY_HOME="$T/home"
cd "$T" || exit 1
_n=0
_fails=0

ferry() { "$FERRY" "$@"; }
# asan_build: true when $FERRY is built with AddressSanitizer (make asan),
# whose shadow memory and quarantine make the RSS not the program's
asan_build() { ldd "$FERRY" 2>/dev/null | grep -q 'libasan'; }
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

# restore_cmp LIST DIR: restores each snapshot named in the file LIST and
# compares it (diff -r) with the tree DIR/NAME (NAME with "/" as "_"):
# sets bad (restores that failed or differ, each told by diag) and checked
restore_cmp() {
	bad=0 checked=0
	while IFS= read -r _s; do
		rm -rf "$TS/r"
		if ! "$FERRY" restore "$_s" "$TS/r" 2>"$T/err" </dev/null; then
			bad=$((bad + 1)); diag "restore $_s: $(cat "$T/err")"; continue
		fi
		diff -r "$2/$(echo "$_s" | tr / _)" "$TS/r" >"$T/err" 2>&1 ||
			{ bad=$((bad + 1)); diag "$_s: $(head -2 "$T/err")"; }
		checked=$((checked + 1))
	done <"$1"
	rm -rf "$TS/r"
}

# ---- after a write path: gc, restore everything, compare with a control ----
# The figures compared: everything list shows of a dataset's or snapshot's
# space and layout. Pool-level disk use (pool status "used", the pack
# files) is not among them: gc rewrites a pack that is mostly garbage and
# leaves one that is not, so a pool that had garbage legitimately uses more
# or less disk than one that never had; the blocks themselves are compared
# through the per-codec block table instead.
AC_COLS=name,type,used,referenced,logicalused,logicalreferenced,written,usedbysnapshots,compressratio,refcompressratio,volsize,volblocksize
# figures POOL[/DS]: every dataset, snapshot and bookmark of POOL (or of the
# subtree DS) with its figures, names relative to the argument, so two
# pools (or subtrees) can be compared.
figures() {
	"$FERRY" list -H -p -r -t all -o "$AC_COLS" "$1" |
		awk -v p="$1" 'index($0, p) == 1 { $0 = substr($0, length(p) + 1) } { print }'
}
# codecs POOL: the per-codec block table of pool status.
codecs() { "$FERRY" pool status "$1" | sed -n '/CODEC/,$p'; }
# _ac_want REL: in $_acw, the DIR of after_check's first -e whose PATTERN
# matches REL, or nothing.
_ac_want() {
	_acw='' _acifs=$IFS
	IFS='
'
	set -f
	for _m in $_acmap; do
		# shellcheck disable=SC2254
		case $1 in ${_m%%=*}) _acw=${_m#*=}; break ;; esac
	done
	set +f
	IFS=$_acifs
}
# after_check [-B] [-e PATTERN=DIR]... POOL[/DS] CONTROL[/DS] DESC: what
# every test of a write path ends with. Runs gc on both pools (CONTROL must
# have nothing to collect: it wrote nothing it does not use), then checks
# that POOL has the same datasets, snapshots, bookmarks and figures as
# CONTROL (a pool that got the same data in one go), the same per-codec
# block table, and that every snapshot of POOL restores byte for byte
# (metadata included; a volume as its image) identical to CONTROL's.
#   POOL/DS, CONTROL/DS  compare only these subtrees (names relative to
#       them); gc still runs on the whole pools, and the block tables are
#       still the whole pools': the rest of the two pools must hold the
#       same blocks.
#   -B  leave bookmarks out of the listing, for a control that cannot have
#       them: a bookmark of a destroyed snapshot needs that snapshot, which
#       a control never had. Bookmarks have no figures; the test checks
#       their names itself.
#   -e PATTERN=DIR  a snapshot whose name relative to POOL[/DS] matches the
#       shell PATTERN (e.g. '/fs@two', '/s45-*@a') is compared with the tree
#       (or image) DIR that the test kept, instead of with the control's
#       restore: a kept copy of its source, or one restore of a control
#       snapshot that 50 snapshots must equal. The first matching -e wins.
after_check() {
	_acB=0 _acmap=''
	while [ $# -gt 3 ]; do
		case $1 in
		-B) _acB=1; shift ;;
		-e) _acmap="$_acmap$2
"; shift 2 ;;
		*) break ;;
		esac
	done
	_p=$1 _c=$2 _d=$3 _bad=0
	"$FERRY" gc "${_p%%/*}" >/dev/null 2>"$T/err" || { _bad=1; diag "gc ${_p%%/*}: $(cat "$T/err")"; }
	# a pool that got its data in one go has nothing to collect (the
	# first time: a control shared by several checks is collected once)
	run "$FERRY" gc -v "${_c%%/*}"
	like "$rc:$(cat "$T/out" "$T/err")" "^0:freed 0 blocks \(0B\), 0 nodes; packs: 0 deleted, 0 rewritten, 0 orphans removed$" \
		"$_d: the control has nothing to collect"
	if [ "$_acB" = 1 ]; then
		is "$(figures "$_p" | awk -F'\t' '$2 != "bookmark"')" \
			"$(figures "$_c" | awk -F'\t' '$2 != "bookmark"')" \
			"$_d: after gc, datasets, snapshots and space figures equal the control's"
	else
		is "$(figures "$_p")" "$(figures "$_c")" \
			"$_d: after gc, datasets, snapshots, bookmarks and space figures equal the control's"
	fi
	is "$(codecs "${_p%%/*}")" "$(codecs "${_c%%/*}")" \
		"$_d: after gc, the stored blocks per codec equal the control's"
	"$FERRY" list -H -r -t volume -o name "$_p" >"$TS/ac-vols" 2>/dev/null || : >"$TS/ac-vols"
	"$FERRY" list -H -r -t snapshot -o name "$_p" >"$TS/ac-snaps" 2>"$T/err" ||
		{ _bad=1; diag "list $_p: $(cat "$T/err")"; }
	_ns=0
	while IFS= read -r _s; do
		_ns=$((_ns + 1))
		_rel=${_s#"$_p"}
		_ac_want "$_rel"
		rm -rf "$TS/ac-a" "$TS/ac-b"
		if ! "$FERRY" restore "$_s" "$TS/ac-a" 2>"$T/err" </dev/null; then
			_bad=1; diag "restore $_s: $(cat "$T/err")"; continue
		fi
		if [ -z "$_acw" ]; then
			_acw=$TS/ac-b
			if ! "$FERRY" restore "$_c$_rel" "$_acw" 2>"$T/err" </dev/null; then
				_bad=1; diag "restore of the control's $_rel: $(cat "$T/err")"; continue
			fi
		fi
		if grep -Fqx -- "${_s%@*}" "$TS/ac-vols"; then
			cmp "$_acw" "$TS/ac-a" >"$T/err" 2>&1 ||
				{ _bad=1; diag "$_s: the image differs: $(head -1 "$T/err")"; }
		else
			"$FERRY_TOOLS/treecmp" "$_acw" "$TS/ac-a" >"$T/err" 2>&1 </dev/null ||
				{ _bad=1; diag "$_s differs from $_acw: $(head -3 "$T/err")"; }
		fi
	done <"$TS/ac-snaps"
	rm -rf "$TS/ac-a" "$TS/ac-b"
	_acwhat="the control's"
	[ -z "$_acmap" ] || _acwhat="the control's or the trees kept"
	is "$_bad" 0 "$_d: after gc, all $_ns snapshots restore identical to $_acwhat"
}
