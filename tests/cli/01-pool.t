#!/bin/sh
# Pools: create, list, status, export, import, registry, format version.
. "$(dirname "$0")/lib.sh"

run ferry pool create tank "$T/p/tank"
is "$rc" 1 "create refuses a path whose parent is missing"
mkdir -p "$T/p"
run ferry pool create tank "$T/p/tank"
is "$rc" 0 "pool create"
[ -f "$T/p/tank/ferry.pool" ] && [ -f "$T/p/tank/catalog.db" ] && ok "pool files exist" || not_ok "pool files exist"
[ -f "$FERRY_HOME/pools/tank" ] && ok "registered under FERRY_HOME" || not_ok "registered under FERRY_HOME"
is "$(ferry pool list -H | cut -f1,5,6)" "$(printf 'tank\tONLINE\t%s' "$T/p/tank")" "pool list -H"
is "$(ferry list -H -o name,type)" "$(printf 'tank\tfilesystem')" "root dataset exists"

refused 1 "cannot create pool 'tank'.*already exists" "duplicate pool name refused" \
	ferry pool create tank "$T/p/other"
[ ! -e "$T/p/other" ] && ok "nothing left behind by the refused create" || not_ok "nothing left behind"
mkdir -p "$T/p/full" && touch "$T/p/full/x"
refused 1 "not empty" "non-empty directory refused" ferry pool create full "$T/p/full"
refused 1 "cannot create pool '9x': pool name must begin with a letter$" "bad pool name refused" ferry pool create 9x "$T/p/9x"
refused 1 "reserved" "reserved pool name refused" ferry pool create mirror1 "$T/p/m"
refused 2 "usage" "missing arguments are a usage error" ferry pool create tank
refused 2 "unknown pool command" "unknown subcommand" ferry pool frobnicate

run ferry pool create -o compression=gzip-7 -o recordsize=64K bk "$T/p/bk"
is "$rc" 0 "pool create -o"
is "$(ferry get -H -o value,source compression bk)" "$(printf 'gzip-7\tlocal')" "-o sets the root dataset's property"
is "$(ferry get -H -p -o value recordsize bk)" "65536" "-o recordsize"
refused 1 "compression" "pool create with a bad -o value is refused" \
	ferry pool create -o compression=gzip-10 bad "$T/p/bad"
[ ! -e "$T/p/bad" ] && ok "no pool directory after a refused -o" || not_ok "no pool directory after a refused -o"

run ferry pool status tank
like "$rc $(tr '\n' ' ' <"$T/out")" "^0 .*state: ONLINE" "pool status"

ferry create tank/a >/dev/null
run ferry pool export tank
is "$rc" 0 "pool export"
refused 1 "no such pool 'tank'" "exported pool is gone from the registry" ferry list tank
[ -f "$T/p/tank/catalog.db" ] && ok "export keeps the files" || not_ok "export keeps the files"
run ferry pool import "$T/p/tank"
is "$rc" 0 "pool import by path"
is "$(ferry list -H -o name -r tank | tr '\n' ' ')" "tank tank/a " "import brings the datasets back"
ferry pool export tank
run ferry pool import "$T/p/tank" renamed
is "$rc" 0 "import under another name"
is "$(ferry list -H -o name -r renamed | tr '\n' ' ')" "renamed renamed/a " "datasets follow the new name"
refused 1 "cannot import pool at '.*': pool 'renamed' is already imported$" "importing twice is refused" ferry pool import "$T/p/tank" renamed
refused 1 "not a ferry pool" "a directory that is not a pool is refused" ferry pool import "$T"

# A pool written by a newer ferry is refused, clearly.
sqlite3 "$T/p/bk/catalog.db" "UPDATE meta SET value='99' WHERE key='format_version'"
refused 1 "format version 99" "newer catalogue format refused" ferry list bk
echo "ferry pool format 7" > "$T/p/bk/ferry.pool"
refused 1 "format version 7" "newer pool marker refused" ferry get all bk

done_testing
