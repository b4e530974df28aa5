#!/bin/sh
# A receive's key sets past what memory holds (store/xfer.c: 49,152 keys in
# memory, the rest in a TEMP table, "tiered"): a stream of more objects
# than that is received whole, and one interrupted past that point keeps
# its partial state (the set saved whole, memory and table) and resumes
# with `send -t`, the received snapshot identical to its source. After gc
# the pool equals one that got the stream in one go.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$TS/src"
# 36,000 small files of distinct content (36,000 blocks, and their nodes):
# past the 49,152 keys memory holds
python3 - "$TS/src" <<'EOF'
import os, sys
top = sys.argv[1]
for i in range(36000):
    d = os.path.join(top, "d%02d" % (i // 1000))
    if i % 1000 == 0:
        os.makedirs(d)
    with open(os.path.join(d, "f%03d" % (i % 1000)), "w") as f:
        f.write("file %d\n" % i)
EOF
ferry pool create -o compression=lz4 tank "$T/p/tank"
ferry create -o source="$TS/src" tank/fs
ferry snapshot tank/fs@a
ferry pool create -o compression=lz4 bk "$T/p/bk"
ferry pool create -o compression=lz4 ctl "$T/p/ctl"
ferry send -c tank/fs@a >"$T/stream"
run sh -c "'$FERRY' recv ctl/fs <'$T/stream'"
is "$rc" 0 "the whole stream received in one go"
is "$(ferry list -H -o name -t snapshot ctl/fs)" "ctl/fs@a" "... its snapshot committed"
# cut it at nine tenths: past 49,152 objects
size=$(stat -c %s "$T/stream")
head -c $((size * 9 / 10)) "$T/stream" >"$T/cut"
run sh -c "'$FERRY' recv -s bk/fs <'$T/cut'"
is "$rc" 1 "the cut stream is refused"
tok=$(ferry get -H -o value receive_resume_token bk/fs)
like "$tok" "^1-[0-9a-f]+$" "its partial state is kept, with a token"
n=$(sqlite3 "$T/p/bk/catalog.db" "SELECT count(*) FROM recv_partial_objs")
[ "$n" -gt 49152 ] && ok "the partial state holds $n objects, more than memory holds" ||
	not_ok "the partial state holds $n objects, not more than 49,152"
run sh -c "'$FERRY' send -v -t '$tok' 2>'$T/send.err' | '$FERRY' recv -s bk/fs"
is "$rc" 0 "send -t resumes it"
is "$(ferry get -H -o value receive_resume_token bk/fs)" "-" "no partial state left"
ferry restore bk/fs@a "$TS/back"
run "$FERRY_TOOLS/treecmp" --no-root "$TS/src" "$TS/back"
is "$rc" 0 "the resumed snapshot restores identical to its source"
after_check bk ctl "a resumed receive past the in-memory key sets"
done_testing
