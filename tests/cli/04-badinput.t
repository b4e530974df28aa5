#!/bin/sh
# Bad input is refused before anything changes: one line on stderr naming
# the thing and the reason, exit 2 for usage errors and 1 otherwise, and
# `ferry get -r all` exactly as before.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p"
ferry pool create tank "$T/p/tank"
ferry pool create -o compression=gzip-7 bk "$T/p/bk"
ferry create -p tank/a/b
ferry create -V 4M tank/vol
ferry set org.example:x=1 tank/a

state() {
	# 'available' follows the host filesystem's free space, not ferry's state
	ferry get -r -H -p all tank bk | awk -F'\t' '$2 != "available"'
	ferry pool list -H -o name 2>/dev/null; ls "$FERRY_HOME/pools"
}
state > "$T/before"

# bad CODE REGEX DESC CMD...: refused as documented, and nothing changed.
bad() {
	refused "$@"
	state > "$T/after"
	if cmp -s "$T/before" "$T/after"; then ok "  ... and left get -r all unchanged"; else
		not_ok "  ... and left get -r all unchanged"; diag "$(diff "$T/before" "$T/after")"; fi
}

long=$(printf 'x%.0s' $(seq 1 260))
bad 1 "'tank/a%b'.*invalid character '%'" "invalid character %" ferry create 'tank/a%b'
bad 1 "invalid character '\*'" "invalid character *" ferry create 'tank/a*b'
bad 1 "invalid character 0x09" "control character" ferry create "$(printf 'tank/a\tb')"
bad 1 "invalid character 0xc3" "non-ASCII byte" ferry create "tank/caf$(printf '\303\251')"
bad 1 "'\.' and '\.\.'" "'..' component" ferry create 'tank/..'
bad 1 "'\.' and '\.\.'" "'..' in the middle" ferry create -p 'tank/a/../b'
bad 1 "'\.' and '\.\.'" "'.' component" ferry create 'tank/./a'
bad 1 "empty dataset component" "empty component" ferry create 'tank//a'
bad 1 "trailing '/'" "trailing slash" ferry create 'tank/a/'
bad 1 "leading '/'" "leading slash" ferry create '/tank/a'
bad 1 "longer than 255" "over-long name" ferry create "tank/$long"
bad 1 "unexpected '@'" "snapshot name where a dataset is wanted" ferry create 'tank/a@s'
bad 1 "already exists" "existing dataset" ferry create tank/a
bad 1 "comes with the pool" "creating a pool's root" ferry create tank
bad 1 "no such pool 'nopool'" "missing pool" ferry create nopool/a
bad 1 "no such pool 'nopool'" "missing pool for get" ferry get all nopool
bad 1 "does not exist" "missing dataset" ferry set compression=lz4 tank/nope
bad 1 "invalid property 'foo'" "unknown property on set" ferry set foo=bar tank/a
bad 1 "invalid property 'foo'" "unknown property on create" ferry create -o foo=bar tank/c
bad 1 "invalid property 'foo'" "unknown property on get" ferry get foo tank
bad 1 "invalid property 'Foo:Bar'" "user property names are lower case" ferry set Foo:Bar=1 tank
bad 1 "gzip-10" "compression=gzip-10" ferry set compression=gzip-10 tank
bad 1 "gzip-0" "compression=gzip-0" ferry set compression=gzip-0 tank
bad 1 "'compression' must be one of" "compression=lzjb" ferry set compression=lzjb tank/a
bad 1 "recordsize.*3K" "recordsize=3K" ferry set recordsize=3K tank
bad 1 "recordsize.*2M" "recordsize=2M" ferry set recordsize=2M tank
bad 1 "recordsize.*256" "recordsize=256" ferry set recordsize=256 tank
bad 1 "recordsize.*abc" "recordsize=abc" ferry set recordsize=abc tank
bad 1 "volsize" "volsize=0" ferry set volsize=0 tank/vol
bad 1 "multiple of volblocksize" "volsize not a multiple of volblocksize" ferry create -V 1000 tank/v2
bad 1 "read-only" "read-only property" ferry set used=5 tank/a
bad 1 "read-only" "compressratio is read-only" ferry set compressratio=2 tank/a
bad 1 "absolute path" "relative source path" ferry set source=rel/dir tank/a
bad 1 "longer than 8192" "over-long user property value" ferry set "org.example:big=$(head -c 9000 /dev/zero | tr '\0' x)" tank/a
bad 1 "invalid property" "all-or-nothing set: one bad property" ferry set compression=lz4 bogus=1 tank/a
bad 1 "'compression' must be one of" "all-or-nothing set: one bad value" ferry set recordsize=64K compression=nope tank/a
bad 1 "has children" "destroying a dataset with children" ferry destroy tank/a
bad 1 "already exists" "duplicate pool name" ferry pool create tank "$T/p/tank2"
bad 1 "not a ferry pool" "a path that is not a pool" ferry pool import "$T/p"
mkdir -p "$T/p/notpool"; echo junk > "$T/p/notpool/catalog.db"
bad 1 "not a ferry pool" "a directory with a stray catalog.db" ferry pool import "$T/p/notpool"
bad 1 "invalid character ' '" "pool name with a space" ferry pool create "a b" "$T/p/ab"
bad 1 "no such pool" "exporting a missing pool" ferry pool export nopool
bad 1 "read-only" "inherit of a read-only property" ferry inherit used tank/a
bad 1 "cannot be inherited" "volsize cannot be inherited" ferry inherit volsize tank/vol

bad 2 "unknown command" "unknown command" ferry frob
bad 2 "usage" "unknown option" ferry list -Z
bad 2 "usage" "missing dataset" ferry set compression=lz4
bad 2 "bad property assignment" "-o without =" ferry create -o compression tank/c
bad 2 "bad depth" "bad -d" ferry list -d x
bad 2 "bad type list" "bad -t" ferry list -t bogus
bad 2 "usage" "get with one argument" ferry get all
bad 2 "bad field" "bad get -o field" ferry get -o name,bogus all tank
bad 2 "usage" "destroy without a dataset" ferry destroy
run ferry; is "$rc" 2 "no command at all is a usage error"
run ferry --help; is "$rc" 0 "--help exits 0"
like "$(cat "$T/out")" "exit codes" "--help documents the exit codes"

done_testing
