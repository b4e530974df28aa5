#!/bin/sh
# Layers point one way. Each folder may include only the public headers of
# the folders below it; library folders never include cli/.
set -eu
fail=0
check() { # dir allowed-dirs...
	d=$1; shift
	for f in "$d"/*.c "$d"/*.h; do
		[ -f "$f" ] || continue
		grep -o '#include "[^"]*"' "$f" | sed 's/#include "//; s/"$//' | while read -r inc; do
			case "$inc" in
			*/*) top=$(echo "$inc" | sed 's#^\.\./##; s#/.*##') ;;
			*) continue ;; # same folder
			esac
			ok=0
			for a in "$@"; do [ "$top" = "$a" ] && ok=1; done
			if [ $ok -eq 0 ]; then echo "depcheck: $f includes $inc (not allowed from $d/)"; exit 1; fi
		done || fail=1
	done
}
check lib lib
check stream lib stream
check store lib store
check net lib net
check send lib stream store send
check recv lib stream store recv
check cli lib stream store send recv net cli
if grep -l 'curl/curl.h\|microhttpd.h' lib/*.c store/*.c stream/*.c send/*.c recv/*.c 2>/dev/null; then
	echo "depcheck: libcurl/libmicrohttpd belong in net/ only"; fail=1
fi
[ $fail -eq 0 ] || exit 1
echo "depcheck: layers ok"
