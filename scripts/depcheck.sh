#!/bin/sh
# Layers point one way (DESIGN.md): lib <- stream, store <- capture,
# restore, send, recv, scrub <- sync; net moves bytes; only cli wires them. Each
# folder may include only the public headers of the folders it may use
# (a folder's public header is the one named after it: store/store.h,
# capture/capture.h, ...; lib/lib.h; stream/stream.h), its own headers,
# and never another folder's private one (internal.h and the rest).
# Libraries stay where they belong: libarchive in capture/ and restore/
# (and lib/arc.c, which loads it for them),
# libcurl and libmicrohttpd in net/, SQLite in store/.
#
#   sh scripts/depcheck.sh [ROOT]     (ROOT: the tree to check, default .)
#
# One awk pass over every source file (tests/cli/06 runs this 18 times).
set -eu
root=${1:-.}
cd "$root"
set --
for f in */*.c */*.h; do
	case $f in tests/* | bench/* | build*/*) continue ;; esac
	[ -f "$f" ] && set -- "$@" "$f"
done
[ $# -gt 0 ] || { echo "depcheck: no sources under $root"; exit 1; }
awk '
BEGIN {
	# the folders each folder may use (a folder not named here is not
	# checked for its includes, only for the libraries below)
	uses["lib"] = ""
	uses["stream"] = "lib"
	uses["store"] = "lib"
	uses["capture"] = "lib store"
	uses["restore"] = "lib store"
	uses["send"] = "lib stream store"
	uses["recv"] = "lib stream store"
	uses["net"] = "lib"
	uses["sync"] = "lib stream store send recv net"
	uses["scrub"] = "lib store"
	uses["cli"] = "lib stream store capture restore send recv net sync scrub"
	# public headers besides DIR/DIR.h, and the folders that may include
	# them ("all": every one that may use the folder)
	public["store/codec.h"] = "all"
	public["lib/arc.h"] = "capture restore"
	# libraries: the start of the name in #include <...>, and where
	nlibs = split("archive curl/ microhttpd sqlite3", libpat, " ")
	libdirs["archive"] = "lib capture restore"
	libdirs["curl/"] = "net"
	libdirs["microhttpd"] = "net"
	libdirs["sqlite3"] = "store"
	fail = 0
}
function listed(word, list,    n, a, i) {
	n = split(list, a, " ")
	for (i = 1; i <= n; i++)
		if (a[i] == word)
			return 1
	return 0
}
FNR == 1 { dir = FILENAME; sub(/\/.*/, "", dir) }
/^#include "/ {
	if (!(dir in uses))
		next
	inc = $0
	sub(/^#include "/, "", inc)
	sub(/".*/, "", inc)
	if (index(inc, "/") == 0)
		next # same folder
	path = inc
	sub(/^\.\.\//, "", path)
	top = path
	sub(/\/.*/, "", top)
	if (top == dir)
		next
	if (!listed(top, uses[dir])) {
		printf "depcheck: %s includes %s (not allowed from %s/)\n", FILENAME, inc, dir
		fail = 1
	} else if (path != top "/" top ".h" && !(path in public)) {
		printf "depcheck: %s includes %s, a private header of %s/\n", FILENAME, inc, top
		fail = 1
	} else if ((path in public) && public[path] != "all" && !listed(dir, public[path])) {
		printf "depcheck: %s includes %s (only from %s)\n", FILENAME, inc, public[path]
		fail = 1
	}
	next
}
/^#include </ {
	for (i = 1; i <= nlibs; i++) {
		p = libpat[i]
		if (index($0, "#include <" p) != 1 || listed(dir, libdirs[p]) || ((FILENAME, p) in said))
			continue
		said[FILENAME, p] = 1
		printf "depcheck: %s uses <%s...> (only in %s)\n", FILENAME, p, libdirs[p]
		fail = 1
	}
}
END {
	if (fail)
		exit 1
	print "depcheck: layers ok"
}
' "$@"
