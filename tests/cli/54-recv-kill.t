#!/bin/sh
# A receive killed (kill -9) at any of its fsyncs leaves the target as it
# was or the snapshot whole: never an empty dataset made for it, and a
# resume either commits its snapshot and ends the partial state, or
# neither. (A new dataset used to be created in its own transaction, and
# a resume committed the snapshot and dropped the token in two.)
. "$(dirname "$0")/lib.sh"
if ! strace -f -qq -o /dev/null -e trace=fsync -e inject=fsync:signal=KILL:when=1 true 2>/dev/null &&
	! strace -qq -o /dev/null -e inject=fsync:error=EIO true 2>/dev/null; then
	echo "1..0 # SKIP strace cannot inject here"; exit 0
fi
mkdir -p "$T/p" "$T/src"
head -c 3000000 /dev/urandom >"$T/src/f"
seq 1 100000 >"$T/src/n"
ferry pool create tank "$T/p/tank"
ferry create -o source="$T/src" -o recordsize=32K tank/fs
ferry snapshot tank/fs@s
ferry send tank/fs@s >"$T/full"
head -c 2000000 "$T/full" >"$T/cut"
ferry pool create -o compression=gzip-7 ctl "$T/p/ctl"
ferry recv ctl/fs <"$T/full"
# killed RUN...: runs it under strace, killed at the Kth fsync or fdatasync
killed() {
	_k=$1; shift
	strace -f -qq -o /dev/null -e trace=fsync,fdatasync \
		-e inject=fsync,fdatasync:signal=KILL:when="$_k" "$@" 2>/dev/null
}
fresh() {
	ferry pool export bk 2>/dev/null; rm -rf "$T/p/bk"
	ferry pool create -o compression=gzip-7 bk "$T/p/bk"
}
empty=0 kills=0
for k in $(seq 1 10); do
	fresh
	killed "$k" "$FERRY" recv bk/fs <"$T/full" && continue
	kills=$((kills + 1))
	if ferry list -H -o name bk/fs >/dev/null 2>&1 &&
		[ -z "$(ferry list -H -t snapshot -o name bk/fs)" ]; then
		empty=$((empty + 1)); diag "kill at fsync $k left an empty bk/fs"
	fi
	# killed after its commit, the snapshot is there; else a retry works
	if [ -z "$(ferry list -H -t snapshot -o name bk/fs 2>/dev/null)" ]; then
		run "$FERRY" recv -F bk/fs <"$T/full"
		[ "$rc" = 0 ] || { empty=$((empty + 1)); diag "retry after kill $k: $(cat "$T/err")"; }
	fi
done
[ "$kills" -ge 3 ] && ok "a full receive was killed at $kills fsyncs" || not_ok "only $kills kills"
is "$empty" 0 "no kill left an empty dataset behind, and each retry succeeded"
after_check bk ctl "after the last killed receive and its retry"

half=0 kills=0
for k in $(seq 1 10); do
	fresh
	ferry recv -s bk/fs <"$T/cut" 2>/dev/null
	"$FERRY" send -t "$(ferry get -H -o value receive_resume_token bk/fs)" >"$T/rest"
	killed "$k" "$FERRY" recv -s bk/fs <"$T/rest" && continue
	kills=$((kills + 1))
	sn=$(ferry list -H -t snapshot -o name bk/fs 2>/dev/null)
	tok=$(ferry get -H -o value receive_resume_token bk/fs 2>/dev/null)
	if [ -n "$sn" ] && [ "$tok" != "-" ]; then
		half=$((half + 1)); diag "kill at fsync $k: snapshot committed, token kept"
	elif [ -z "$sn" ] && [ "$tok" = "-" ]; then
		half=$((half + 1)); diag "kill at fsync $k: neither snapshot nor token"
	elif [ -z "$sn" ]; then
		"$FERRY" send -t "$tok" | "$FERRY" recv -s bk/fs 2>"$T/err" ||
			{ half=$((half + 1)); diag "resume after kill $k: $(cat "$T/err")"; }
	fi
done
[ "$kills" -ge 3 ] && ok "a resumed receive was killed at $kills fsyncs" || not_ok "only $kills kills"
is "$half" 0 "each killed resume committed snapshot and end of partial state together, or neither"
after_check bk ctl "after the last killed resume and its retry"
done_testing
