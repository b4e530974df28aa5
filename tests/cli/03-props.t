#!/bin/sh
# Properties: inheritance as zfs shows it, nearest ancestor, inherit, user
# properties, aliases and values.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p"
ferry pool create tank "$T/p/tank"
ferry create -p tank/a/b/c
ferry create -p tank/x/y
ferry create -V 1M tank/vol

is "$(ferry get -H -o value,source compression tank/a/b)" "$(printf 'on\tdefault')" "default compression is on"
ferry set compression=gzip-7 tank
all_inherited=1
for ds in tank/a tank/a/b tank/a/b/c tank/x tank/x/y tank/vol; do
	[ "$(ferry get -H -o value,source compression $ds)" = "$(printf 'gzip-7\tinherited from tank')" ] || all_inherited=0
done
is "$all_inherited" 1 "set compression=gzip-7 tank: every child shows 'inherited from tank'"
is "$(ferry get -H -o source compression tank)" "local" "the root's own source is local"

ferry set compression=lz4 tank/a
is "$(ferry get -H -o value,source compression tank/a/b/c)" "$(printf 'lz4\tinherited from tank/a')" "nearest ancestor wins"
is "$(ferry get -H -o value,source compression tank/x/y)" "$(printf 'gzip-7\tinherited from tank')" "other branch still inherits from the root"
ferry set compression=off tank/a/b
is "$(ferry get -H -o value,source compression tank/a/b/c)" "$(printf 'off\tinherited from tank/a/b')" "deeper ancestor wins again"

ferry inherit compression tank/a/b
is "$(ferry get -H -o value,source compression tank/a/b)" "$(printf 'lz4\tinherited from tank/a')" "inherit goes back to the ancestor's value"
ferry set compression=zle tank/a/b tank/a/b/c
ferry inherit -r compression tank/a
is "$(ferry get -H -o value,source -r compression tank/a | sort -u | tr '\n' ' ')" "$(printf 'gzip-7\tinherited from tank ')" "inherit -r clears the whole subtree"
ferry inherit compression tank
is "$(ferry get -H -o value,source compression tank/a/b/c)" "$(printf 'on\tdefault')" "inherit on the root returns to the default"

# Canonical values as zfs shows them
ferry set compression=gzip-6 tank/x; is "$(ferry get -H -o value compression tank/x)" "gzip" "gzip-6 shows as gzip"
ferry set compression=gzip tank/x; is "$(ferry get -H -o value compression tank/x)" "gzip" "gzip"
for c in off on lz4 zle gzip-1 gzip-9; do
	ferry set compression=$c tank/x
	is "$(ferry get -H -o value compression tank/x)" "$c" "compression=$c"
done
ferry set compress=lz4 tank/x
is "$(ferry get -H -o value compression tank/x)" "lz4" "alias compress="
for rs in 512 1K 4K 64K 128K 1M; do
	ferry set recordsize=$rs tank/x
	is "$(ferry get -H -o value recordsize tank/x)" "$rs" "recordsize=$rs"
done
ferry set recordsize=32768 tank/x
is "$(ferry get -H -p -o value recordsize tank/x)" "32768" "recordsize in bytes"
is "$(ferry get -H -o value,source recordsize tank/x/y)" "$(printf '32K\tinherited from tank/x')" "recordsize inherits"
ferry set recordsize=8K tank
is "$(ferry get -H -o value,source recordsize tank/a/b)" "$(printf '8K\tinherited from tank')" "recordsize inherited from the root"

# source: a path, not inherited
mkdir -p "$T/src"
ferry set source="$T/src" tank/a
is "$(ferry get -H -o value,source source tank/a)" "$(printf '%s\tlocal' "$T/src")" "source set"
is "$(ferry get -H -o value,source source tank/a/b)" "$(printf 'none\tdefault')" "source is not inherited"
is "$(ferry get -H -o value source tank/vol)" "-" "source does not apply to volumes"

# volsize can change; several properties at once
ferry set volsize=2M compression=gzip-2 tank/vol
is "$(ferry get -H -o value volsize,compression tank/vol | tr '\n' ' ')" "2M gzip-2 " "set several properties at once"

# user properties
ferry set org.example:owner=alice tank/a
is "$(ferry get -H -o value,source org.example:owner tank/a/b/c)" "$(printf 'alice\tinherited from tank/a')" "user property inherits"
is "$(ferry get -H -o value,source org.example:owner tank/x)" "$(printf -- '-\t-')" "unset user property shows -"
ferry set 'org.example:note=with spaces, commas = and =' tank/a/b
is "$(ferry get -H -o value org.example:note tank/a/b)" "with spaces, commas = and =" "user property value kept verbatim"
like "$(ferry get -H -o property all tank/a/b/c | tr '\n' ' ')" "org.example:note org.example:owner" "get all lists inherited user properties"
ferry inherit org.example:owner tank/a
is "$(ferry get -H -o value org.example:owner tank/a/b/c)" "-" "inherit removes a user property"

# get: several properties, several datasets, -d
is "$(ferry get -H -o name,property compression,recordsize tank/a tank/x | tr '\t\n' ':,')" \
	"tank/a:compression,tank/a:recordsize,tank/x:compression,tank/x:recordsize," "get several props and datasets"
is "$(ferry get -H -o name -d 1 type tank | tr '\n' ' ')" "tank tank/a tank/vol tank/x " "get -d 1"
is "$(ferry get -H -o name -t volume -r type tank)" "tank/vol" "get -t volume"

# read-only figures
for p in used referenced logicalused logicalreferenced compressratio refcompressratio creation guid type written available; do
	run ferry get -H -o value $p tank/a
	[ "$rc" = 0 ] && [ -s "$T/out" ] && ok "get $p" || not_ok "get $p"
done
is "$(ferry get -H -p -o value compressratio tank/a)" "1.00" "compressratio -p"
g1=$(ferry get -H -o value guid tank/a); g2=$(ferry get -H -o value guid tank/x)
[ "$g1" != "$g2" ] && ok "guids differ" || not_ok "guids differ"
like "$(ferry get -H -p -o value creation tank/a)" "^[0-9]{10}$" "creation -p is epoch seconds"

done_testing
