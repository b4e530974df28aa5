#!/bin/sh
# make depcheck holds the layers: on a copy of the tree it passes, and it
# fails, naming the file, on each planted violation of each rule.
. "$(dirname "$0")/lib.sh"
for d in lib stream store capture restore send recv net sync scrub cli scripts; do
	[ -d "$FERRY_SRC/$d" ] && cp -r "$FERRY_SRC/$d" "$T/$d"
done
mkdir -p "$T/net" "$T/sync"
run sh "$T/scripts/depcheck.sh" "$T"
is "$rc" 0 "depcheck passes on the tree as it is"
# plant DIR/FILE LINE RE DESC: adds a file with LINE, expects a refusal
# naming it that matches RE, then removes it
plant() {
	printf '%s\n' "$2" >"$T/$1"
	run sh "$T/scripts/depcheck.sh" "$T"
	if [ "$rc" != 0 ] && grep -q "$1" "$T/out" && grep -Eq "$3" "$T/out"; then ok "$4"; else
		not_ok "$4"; diag "rc=$rc: $(cat "$T/out" "$T/err")"; fi
	rm -f "$T/$1"
}
plant lib/x.c '#include "../store/store.h"' "not allowed from lib/" "lib/ may not use store/"
plant stream/x.c '#include "../store/store.h"' "not allowed from stream/" "stream/ may not use store/"
plant store/x.c '#include "../stream/stream.h"' "not allowed from store/" "store/ may not use stream/"
plant store/x.c '#include "../capture/capture.h"' "not allowed from store/" "store/ may not use capture/"
plant recv/x.c '#include "../capture/capture.h"' "not allowed from recv/" "recv/ may not use capture/"
plant send/x.c '#include "../recv/recv.h"' "not allowed from send/" "send/ may not use recv/"
plant capture/x.c '#include "../restore/restore.h"' "not allowed from capture/" "capture/ may not use restore/"
plant scrub/x.c '#include "../send/send.h"' "not allowed from scrub/" "scrub/ may not use send/"
plant scrub/x.c '#include "../store/internal.h"' "private header of store/" "scrub/ may not include store's internal.h"
plant net/x.c '#include "../store/store.h"' "not allowed from net/" "net/ moves bytes: no store/"
plant cli/x.c '#include "../store/internal.h"' "private header of store/" "cli/ may not include store's internal.h"
plant recv/x.c '#include "../store/internal.h"' "private header of store/" "recv/ may not include store's internal.h"
plant cli/x.c '#include "../capture/internal.h"' "private header of capture/" "cli/ may not include capture's internal.h"
plant store/x.c '#include <archive.h>' "only in lib capture restore" "libarchive only in capture/ and restore/ (and lib/arc.c, its loader)"
plant send/x.c '#include <archive_entry.h>' "only in lib capture restore" "libarchive's headers too"
plant send/x.c '#include "../lib/arc.h"' "only from capture restore" "libarchive's table only in capture/ and restore/"
plant recv/x.c '#include <curl/curl.h>' "only in net" "libcurl only in net/"
plant cli/x.c '#include <microhttpd.h>' "only in net" "libmicrohttpd only in net/"
plant recv/x.c '#include <sqlite3.h>' "only in store" "SQLite only in store/"
run sh "$T/scripts/depcheck.sh" "$T"
is "$rc" 0 "and passes again once each is removed"
done_testing
