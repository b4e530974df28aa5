#!/bin/sh
# Layers point one way (DESIGN.md): lib <- stream, store <- capture,
# restore, send, recv <- sync; net moves bytes; only cli wires them. Each
# folder may include only the public headers of the folders it may use
# (a folder's public header is the one named after it: store/store.h,
# capture/capture.h, ...; lib/lib.h; stream/stream.h), its own headers,
# and never another folder's private one (internal.h and the rest).
# Libraries stay where they belong: libarchive in capture/ and restore/,
# libcurl and libmicrohttpd in net/, SQLite in store/.
#
#   sh scripts/depcheck.sh [ROOT]     (ROOT: the tree to check, default .)
set -eu
root=${1:-.}
cd "$root"
fail=0
# public FOLDER: the public headers of FOLDER, one per line
public() {
	case $1 in
	lib) echo lib/lib.h ;;
	store) echo store/store.h; echo store/codec.h ;;
	*) echo "$1/$1.h" ;;
	esac
}
check() { # dir allowed-dirs...
	d=$1; shift
	for f in "$d"/*.c "$d"/*.h; do
		[ -f "$f" ] || continue
		for inc in $(grep -o '^#include "[^"]*"' "$f" | sed 's/#include "//; s/"$//'); do
			case "$inc" in
			*/*) path=$(echo "$inc" | sed 's#^\.\./##') ;;
			*) continue ;; # same folder
			esac
			top=${path%%/*}
			[ "$top" = "$d" ] && continue
			ok=0
			for a in "$@"; do
				[ "$top" = "$a" ] || continue
				public "$a" | grep -qx "$path" && ok=1
				[ $ok = 0 ] && { echo "depcheck: $f includes $inc, a private header of $a/"; fail=1; ok=2; }
			done
			if [ $ok = 0 ]; then echo "depcheck: $f includes $inc (not allowed from $d/)"; fail=1; fi
		done
	done
}
check lib
check stream lib
check store lib
check capture lib store
check restore lib store
check send lib stream store
check recv lib stream store
check net lib
check sync lib stream store send recv net
check cli lib stream store capture restore send recv net sync
# libraries: where each may be used
lib_only() { # pattern allowed-dirs...
	pat=$1; shift
	for f in */*.c */*.h; do
		case $f in tests/* | bench/* | build*/*) continue ;; esac
		grep -q "^#include <$pat" "$f" || continue
		d=${f%%/*} ok=0
		for a in "$@"; do [ "$d" = "$a" ] && ok=1; done
		[ $ok = 1 ] || { echo "depcheck: $f uses <$pat...> (only in $*)"; fail=1; }
	done
}
lib_only 'archive' capture restore
lib_only 'curl/' net
lib_only 'microhttpd' net
lib_only 'sqlite3' store
[ $fail -eq 0 ] || exit 1
echo "depcheck: layers ok"
