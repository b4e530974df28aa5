#!/bin/sh
# Datasets: nested create, volumes, list options, destroy, machine output.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p"
ferry pool create tank "$T/p/tank"

run ferry create tank/a; is "$rc" 0 "create tank/a"
run ferry create tank/a/b/c; is "$rc" 1 "create without -p needs the parent"
run ferry create -p tank/a/b/c; is "$rc" 0 "create -p makes the parents"
ferry create tank/a/b/c2
ferry create -V 64M tank/vol
is "$(ferry list -H -o name -r tank | tr '\n' ' ')" "tank tank/a tank/a/b tank/a/b/c tank/a/b/c2 tank/vol " \
	"list -r: parents first, siblings by name"
is "$(ferry list -H -o name -d 1 tank | tr '\n' ' ')" "tank tank/a tank/vol " "list -d 1"
is "$(ferry list -H -o name tank/a)" "tank/a" "list without -r shows only the named dataset"
is "$(ferry list -H -o name -t volume -r tank)" "tank/vol" "list -t volume"
is "$(ferry list -H -o name,type -t filesystem -r tank/a/b | cut -f2 | sort -u)" "filesystem" "list -t filesystem"
is "$(ferry get -H -p -o value volsize tank/vol)" "67108864" "volsize exact"
is "$(ferry get -H -o value volsize tank/vol)" "64M" "volsize human"
is "$(ferry get -H -o value,source volblocksize tank/vol)" "$(printf '16K\tdefault')" "volblocksize default"
is "$(ferry get -H -o value type tank/vol)" "volume" "type volume"
run ferry create -V 8M -b 4K tank/vol2; is "$rc" 0 "create -V -b"
is "$(ferry get -H -p -o value volblocksize tank/vol2)" "4096" "volblocksize from -b"
refused 1 "parent.*volume" "no datasets under a volume" ferry create tank/vol/x
refused 1 "does not apply to a filesystem" "volume properties need -V" ferry create -o volblocksize=4K tank/v3
refused 1 "does not apply" "recordsize does not apply to volumes" ferry create -V 1M -o recordsize=64K tank/v4
refused 1 "can be set only at creation" "volblocksize cannot change later" ferry set volblocksize=8K tank/vol

# Default columns, headers and numbers
run ferry list tank
like "$rc:$(head -1 "$T/out")" "^0:NAME +USED +AVAIL +REFER +SOURCE$" "list header as zfs"
is "$(ferry list -H -p -o name,used,referenced,compressratio tank/a)" "$(printf 'tank/a\t0\t0\t1.00')" "-H -p figures"
is "$(ferry get -H -o value compressratio,refcompressratio tank/a | tr '\n' ' ')" "1.00x 1.00x " "compressratio 1.00x"
is "$(ferry get -H -o value used,logicalused,referenced,logicalreferenced,written tank/a | tr '\n' ' ')" "0B 0B 0B 0B 0B " "figures are 0 before data"

# Sorting
ferry set recordsize=16K tank/a/b/c
ferry set recordsize=1M tank/a/b/c2
is "$(ferry list -H -o name -s recordsize -r tank/a | tr '\n' ' ')" "tank/a/b/c tank/a tank/a/b tank/a/b/c2 " "list -s recordsize (numeric)"
is "$(ferry list -H -o name -S recordsize -r tank/a | head -1)" "tank/a/b/c2" "list -S descending"
is "$(ferry list -H -o name -S name -r tank/a | tr '\n' ' ')" "tank/a/b/c2 tank/a/b/c tank/a/b tank/a " "list -S name"
# a sort key given twice, not among -o's columns: one hidden column, sorted
# on twice, and the columns of -o printed with their header
run ferry list -o name -s recordsize -S recordsize -r tank/a
is "$rc:$(cat "$T/out")" "0:$(printf 'NAME\ntank/a/b/c\ntank/a\ntank/a/b\ntank/a/b/c2')" "list -o name -s P -S P: -o's column and header, sorted on P"
is "$(ferry list -H -o name,avail -S recordsize -s available -r tank/a | awk -F'\t' '{print NF}' | sort -u)" "2" "hidden sort columns are never printed"

# -H -p output parses: every row has the requested field count, numbers are numbers
ferry get -r -H -p all tank > "$T/all.tsv"
bad=$(awk -F'\t' 'NF != 4 {print NR}' "$T/all.tsv")
is "$bad" "" "get -H -p all: four tab-separated fields on every row"
bad=$(awk -F'\t' '$2 ~ /^(used|referenced|logicalused|recordsize|volsize|createtxg|guid)$/ && $3 !~ /^[0-9]+$/ {print}' "$T/all.tsv")
is "$bad" "" "get -p prints exact integers"

# JSON parses with a real parser and says the same as -H
ferry get -r --json -p compression,recordsize,myns:tag tank > "$T/get.json"
run python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
ds = d["datasets"]
assert ds["tank/a/b/c"]["properties"]["recordsize"]["value"] == "16384", ds["tank/a/b/c"]
assert ds["tank/a/b"]["properties"]["compression"]["source"]["type"] == "DEFAULT"
assert ds["tank/vol"]["type"] == "VOLUME"
print(len(ds))' "$T/get.json"
is "$rc:$(cat "$T/out")" "0:7" "get --json parses and has every dataset"
ferry set compression=lz4 tank/a
ferry list --json -r -o name,used,compression tank > "$T/list.json"
run python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = d["datasets"]["tank/a/b"]["properties"]["compression"]
assert c["value"] == "lz4" and c["source"] == {"type": "INHERITED", "data": "tank/a"}, c
print("ok")' "$T/list.json"
is "$rc:$(cat "$T/out")" "0:ok" "list --json parses, inherited source names the ancestor"
ferry pool list --json > "$T/pools.json"
run python3 -c 'import json,sys; print(list(json.load(open(sys.argv[1]))["pools"]))' "$T/pools.json"
is "$rc:$(cat "$T/out")" "0:['tank']" "pool list --json parses"

# Destroy
refused 1 "has children" "destroy with children needs -r" ferry destroy tank/a
is "$(ferry list -H -o name -r tank/a | wc -l)" "4" "refused destroy changed nothing"
run ferry destroy -n -v -r tank/a/b
is "$rc:$(cat "$T/out" | tr '\n' '|')" "0:would destroy tank/a/b|would destroy tank/a/b/c|would destroy tank/a/b/c2|" \
	"destroy -n -v -r lists what it would destroy"
run ferry destroy -n -v -p -r tank/a/b
is "$rc:$(cat "$T/out" | tr '\n' '|')" "0:destroy	tank/a/b|destroy	tank/a/b/c|destroy	tank/a/b/c2|" \
	"destroy -n -v -p: zfs's parseable destroy<TAB>NAME lines"
is "$(ferry list -H -o name -r tank/a | wc -l)" "4" "and -n destroyed nothing"
run ferry destroy tank/a/b/c2; is "$rc" 0 "destroy a leaf"
run ferry destroy -r tank/a; is "$rc" 0 "destroy -r"
is "$(ferry list -H -o name -r tank | tr '\n' ' ')" "tank tank/vol tank/vol2 " "destroy -r removed the subtree"
refused 1 "does not exist" "destroying a missing dataset" ferry destroy tank/a
refused 1 "root dataset" "the root dataset is not destroyed" ferry destroy tank
run ferry create tank/a/b; is "$rc" 1 "the destroyed parent is really gone"

done_testing
