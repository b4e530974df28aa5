#!/bin/sh
# make demo: the main job end to end on an embedded default, in a directory
# of its own (kept for a look afterwards; its path is printed at the end).
set -eu
FERRY=${1:-build/ferry}
D=$(mktemp -d "${TMPDIR:-/tmp}/ferry-demo.XXXXXX")
export FERRY_HOME="$D/home"
say() { printf '\n$ %s\n' "$*"; }
run() { say "$*"; "$@"; }
ferry() { "$FERRY" "$@"; }

run ferry pool create -o compression=lz4 tank "$D/tank"
run ferry pool create -o compression=gzip-7 backup "$D/backup"
run ferry create -p tank/host1/home
run ferry create -V 64M tank/host1/vm
run ferry create -p backup/host1
run ferry set org.example:owner=ops tank/host1
run ferry list -r -o name,type,compression,recordsize
run ferry get -r compression,compressratio tank backup
run ferry get -o name,property,value,source org.example:owner tank/host1/home
run ferry pool status backup
printf '\ndemo pools are in %s (FERRY_HOME=%s)\n' "$D" "$FERRY_HOME"
