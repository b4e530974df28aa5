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
# corrupt_resume STREAM DESC SEED SNAP [BASE_STREAM]: with recv -s, each of
# 50 truncations of STREAM is resumed with send -t and ends identical to
# SNAP (a snapshot of tank) — into a fresh dataset per case, which first
# gets BASE_STREAM when STREAM is incremental. Leaves SNAP's tree in
# $T/want, and ctl, a gzip-7 pool whose 50 datasets of the same names got
# BASE_STREAM and STREAM each in one go: the control for after_check.
corrupt_resume() {
	_s=$1 _d=$2 _seed=$3 _want=$4 _base=${5:-}
	ferry restore "$_want" "$T/want"
	_fail=0 _resumed=0
	for i in $(seq 1 50); do
		_t=bk/s$_seed-$i
		[ -n "$_base" ] && ferry recv "$_t" <"$_base"
		"$MESS" trunc "$_s" "$T/m" $((_seed * 1000 + 500 + i)) >/dev/null
		if "$FERRY" recv -s "$_t" <"$T/m" 2>/dev/null; then
			_fail=$((_fail + 1)); diag "truncation $i accepted"; continue
		fi
		_tok=$(ferry get -H -o value receive_resume_token "$_t" 2>/dev/null)
		if [ -n "$_tok" ] && [ "$_tok" != "-" ]; then
			_resumed=$((_resumed + 1))
			"$FERRY" send -t "$_tok" | "$FERRY" recv -s "$_t" 2>"$T/err" ||
				{ _fail=$((_fail + 1)); diag "resume $i: $(cat "$T/err")"; continue; }
		else
			# cut before the first whole record: nothing to keep, start again
			"$FERRY" recv -s "$_t" <"$_s" 2>"$T/err" ||
				{ _fail=$((_fail + 1)); diag "restart $i: $(cat "$T/err")"; continue; }
		fi
		rm -rf "$T/got"
		ferry restore "$_t@${_want#*@}" "$T/got" &&
			"$TREECMP" "$T/want" "$T/got" >/dev/null ||
			{ _fail=$((_fail + 1)); diag "case $i: restored data differs"; }
		[ "$(ferry get -H -o value receive_resume_token "$_t")" = "-" ] ||
			{ _fail=$((_fail + 1)); diag "case $i: a token is left"; }
	done
	is "$_fail" 0 "$_d: recv -s then send -t from each of 50 truncations completes, identical"
	# and still after gc: a resumed snapshot references the blocks that
	# came before its interruption too
	ferry gc bk >/dev/null
	_fail=0
	_lref=$(ferry list -H -p -o logicalreferenced "$_want")
	for i in $(seq 1 50); do
		_t=bk/s$_seed-$i
		ferry list -H -o name "$_t" >/dev/null 2>&1 || continue
		rm -rf "$T/got"
		ferry restore "$_t@${_want#*@}" "$T/got" 2>"$T/err" &&
			"$TREECMP" "$T/want" "$T/got" >/dev/null ||
			{ _fail=$((_fail + 1)); diag "case $i after gc: $(cat "$T/err")"; }
		[ "$(ferry list -H -p -o logicalreferenced "$_t@${_want#*@}")" = "$_lref" ] ||
			{ _fail=$((_fail + 1)); diag "case $i: logicalreferenced differs from the source's"; }
	done
	is "$_fail" 0 "$_d: after gc, every resumed snapshot restores identical with the source's logicalreferenced"
	[ "$_resumed" -ge 40 ] && ok "$_d: $_resumed of 50 cases resumed from a token" ||
		not_ok "$_d: only $_resumed of 50 cases resumed from a token"
	ferry pool create -o compression=gzip-7 ctl "$T/p/ctl"
	for i in $(seq 1 50); do
		[ -n "$_base" ] && ferry recv "ctl/s$_seed-$i" <"$_base"
		ferry recv "ctl/s$_seed-$i" <"$_s"
	done
}
