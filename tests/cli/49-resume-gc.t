#!/bin/sh
# A resumed receive commits a snapshot that references every block of the
# stream, also those that arrived before the interruption: after gc it
# still restores byte for byte, and its space figures equal those of a pool
# that received the same stream in one go. Full and incremental streams and
# -R packages, cut at 10 %, 50 % and 95 %. (The snapshot of a resume used to
# count only the blocks after the cut, and gc freed the others.)
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/src/kid"
head -c 3000000 /dev/urandom >"$T/src/f"
seq 1 200000 >"$T/src/numbers"
ferry pool create tank "$T/p/tank"
ferry create -o source="$T/src" -o recordsize=64K tank/fs
ferry snapshot tank/fs@a
head -c 2000000 /dev/urandom >"$T/src/g"
seq 7 90000 >"$T/src/numbers"
ferry create -o source="$T/src/kid" tank/fs/kid
head -c 1500000 /dev/urandom >"$T/src/kid/k"
ferry snapshot -r tank/fs@b
ferry send tank/fs@a >"$T/full"
ferry send -i @a tank/fs@b >"$T/incr"
ferry send -R tank/fs@b >"$T/pkg"

# control: the same streams, each received in one go
ferry pool create -o compression=gzip-7 ctl "$T/p/ctl"
ferry recv ctl/full <"$T/full"
ferry recv ctl/incr <"$T/full"
ferry recv ctl/incr <"$T/incr"
ferry recv ctl/pkg <"$T/pkg"

# cut STREAM PERCENT → $T/cut
cut_at() {
	_sz=$(wc -c <"$1")
	head -c $((_sz * $2 / 100)) "$1" >"$T/cut"
}
# resume TARGET: completes the partial receive of TARGET from its token
resume() {
	_tok=$(ferry get -H -o value receive_resume_token "$1")
	[ -n "$_tok" ] && [ "$_tok" != "-" ] || { diag "no token on $1"; return 1; }
	"$FERRY" send -t "$_tok" | "$FERRY" recv -s "$1"
}

for pct in 10 50 95; do
	ferry pool create -o compression=gzip-7 bk "$T/p/bk"
	cut_at "$T/full" $pct
	run "$FERRY" recv -s bk/full <"$T/cut"
	is "$rc" 1 "full stream cut at $pct %: the receive fails"
	run resume bk/full
	is "$rc" 0 "full stream cut at $pct %: the resume succeeds"
	is "$(ferry list -H -p -o logicalreferenced bk/full@a)" "$(ferry list -H -p -o logicalreferenced tank/fs@a)" \
		"full stream cut at $pct %: logicalreferenced equals the source's"
	is "$(ferry list -H -p -o referenced bk/full@a)" "$(ferry list -H -p -o referenced ctl/full@a)" \
		"full stream cut at $pct %: referenced equals the one-go receive's"

	ferry recv bk/incr <"$T/full"
	cut_at "$T/incr" $pct
	run "$FERRY" recv -s bk/incr <"$T/cut"
	is "$rc" 1 "incremental cut at $pct %: the receive fails"
	run resume bk/incr
	is "$rc" 0 "incremental cut at $pct %: the resume succeeds"
	is "$(ferry list -H -p -o logicalreferenced bk/incr@b)" "$(ferry list -H -p -o logicalreferenced tank/fs@b)" \
		"incremental cut at $pct %: logicalreferenced equals the source's"

	# a package: the cut substream resumes from its token, the rest of
	# the package follows as an incremental package from what arrived
	cut_at "$T/pkg" $pct
	run "$FERRY" recv -s bk/pkg <"$T/cut"
	is "$rc" 1 "-R package cut at $pct %: the receive fails"
	for ds in bk/pkg bk/pkg/kid; do
		_tok=$(ferry get -H -o value receive_resume_token "$ds" 2>/dev/null)
		[ -n "$_tok" ] && [ "$_tok" != "-" ] && resume "$ds"
	done
	_have=$(ferry list -H -t snapshot -o name bk/pkg 2>/dev/null | tail -1)
	if [ -z "$_have" ]; then
		run sh -c "'$FERRY' send -R tank/fs@b | '$FERRY' recv -s bk/pkg"; diag "$(cat "$T/err")"
	elif [ "$_have" != bk/pkg@b ]; then
		run sh -c "'$FERRY' send -R -I @${_have#*@} tank/fs@b | '$FERRY' recv -s bk/pkg"; diag "$(cat "$T/err")"
	else
		_kid=$(ferry list -H -t snapshot -o name bk/pkg/kid 2>/dev/null | tail -1)
		if [ -z "$_kid" ]; then
			run sh -c "'$FERRY' send tank/fs/kid@b | '$FERRY' recv -s bk/pkg/kid"; diag "$(cat "$T/err")"
		else
			rc=0
		fi
	fi
	is "$rc" 0 "-R package cut at $pct %: the rest of the package is received"
	is "$(ferry list -H -p -o logicalreferenced bk/pkg@b bk/pkg/kid@b)" \
		"$(ferry list -H -p -o logicalreferenced tank/fs@b tank/fs/kid@b)" \
		"-R package cut at $pct %: logicalreferenced equals the source's"

	after_check bk ctl "cut at $pct %"
	ferry pool export bk
	rm -rf "$T/p/bk"
done
done_testing
