# tests/cli/corrupt.sh — shared by the 4x corruption tests (sourced, not
# run by prove): a small source tree with two snapshots, a gzip-7 backup
# pool, and corrupt_run STREAM TARGET DESC SEED.
. "$(dirname "$0")/lib.sh"
MESS="$FERRY_TOOLS/mess"
TREECMP="$FERRY_TOOLS/treecmp"
corrupt_setup() {
	mkdir -p "$T/p" "$T/src/d"
	seq 1 40000 >"$T/src/numbers"
	head -c 100000 /dev/urandom >"$T/src/d/random"
	echo small >"$T/src/d/small"
	ln -s numbers "$T/src/link"
	ferry pool create tank "$T/p/tank"
	ferry create -o source="$T/src" -o recordsize=16K tank/fs
	ferry snapshot tank/fs@a
	seq 50000 60000 >>"$T/src/numbers"
	mv "$T/src/d/random" "$T/src/random2"
	echo new >"$T/src/d/new"
	ferry snapshot tank/fs@b
	ferry pool create -o compression=gzip-7 bk "$T/p/bk"
}
state() { # the catalogue as a user sees it
	ferry list -H -p -t all -o name,guid,used,referenced -r bk 2>&1
}
blocks() { ferry pool status bk | sed -n '/CODEC/,$p'; }
# corrupt_run STREAM TARGET DESC SEED
corrupt_run() {
	_s=$1 _tgt=$2 _d=$3 _seed=$4
	_before=$(state)
	_bblocks=$(blocks)
	_snap=$(ferry list -H -t snapshot -o name -r "$_tgt" 2>/dev/null | tail -1)
	[ -n "$_snap" ] && ferry restore "$_snap" "$T/before"
	_bad=0 _accepted=0 _changed=0
	for i in $(seq 1 200); do
		"$MESS" flip "$_s" "$T/m" $((_seed * 1000 + i)) >/dev/null
		if "$FERRY" recv "$_tgt" <"$T/m" 2>"$T/err"; then
			_accepted=$((_accepted + 1)); diag "flip $i accepted"
		fi
		[ "$(wc -l <"$T/err")" = 1 ] || _bad=$((_bad + 1))
		_now=$(state)
		[ "$_now" = "$_before" ] || { _changed=$((_changed + 1)); diag "flip $i changed the pool:" "$_now"; }
	done
	is "$_accepted" 0 "$_d: 200 single-bit flips all refused"
	is "$_bad" 0 "$_d: each refusal is one line on stderr"
	is "$_changed" 0 "$_d: the catalogue is unchanged after every flip"
	_accepted=0 _changed=0
	for i in $(seq 1 50); do
		"$MESS" trunc "$_s" "$T/m" $((_seed * 1000 + 500 + i)) >/dev/null
		if "$FERRY" recv "$_tgt" <"$T/m" 2>"$T/err"; then
			_accepted=$((_accepted + 1)); diag "truncation $i accepted"
		fi
		[ "$(state)" = "$_before" ] || { _changed=$((_changed + 1)); diag "truncation $i changed the pool"; }
	done
	is "$_accepted" 0 "$_d: 50 truncations all refused"
	is "$_changed" 0 "$_d: the catalogue is unchanged after every truncation"
	is "$(blocks)" "$_bblocks" "$_d: no block was added to the catalogue"
	if [ -n "$_snap" ]; then
		ferry restore "$_snap" "$T/after"
		run "$TREECMP" "$T/before" "$T/after"
		is "$rc" 0 "$_d: restored data unchanged"
	fi
	run "$FERRY" recv "$_tgt" <"$_s"
	is "$rc" 0 "$_d: the intact stream is then received"
}
