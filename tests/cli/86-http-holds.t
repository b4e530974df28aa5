#!/bin/sh
# Holds over HTTP (docs/ferry-http.7, GET /v1/datasets): a snapshot object
# has "holds", {TAG: SECONDS} as `ferry holds --json -p` gives them ({}
# without any), and `ferry holds` of a URL prints what the local command
# prints (-r, -H, -p, --json), a missing snapshot failing as locally. A
# listing changes nothing: nothing is written here.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/http.sh"
S=$T/src
mkdir -p "$S"
echo data >"$S/a"
ferry pool create bk "$T/bk"
ferry create -o source="$S" bk/h
ferry create -o source="$S" bk/h/c
ferry create -o source="$S" bk/other
ferry snapshot -r bk/h@one
ferry snapshot bk/h@two
ferry snapshot bk/other@one
FERRY_NOW=2024-03-01T10:00:00Z ferry hold keep bk/h@one
FERRY_NOW=2024-03-01T11:30:00Z ferry hold -r 'ferry-sync:bk2/h' bk/h@one
ferry hold secret bk/other@one
token r bk/h read
serve_start bk
U=$URL/bk/h

req "$(tok r)" GET "/v1/datasets/bk/h?types=snapshot&depth=-1"
is "$status" 200 "GET /v1/datasets of snapshots"
is "$(json_get objects 0 name) $(json_get objects 0 holds)" \
	'bk/h@one {"ferry-sync:bk2/h": 1709292600, "keep": 1709287200}' \
	"a held snapshot lists its holds: tag and the time it was put, in seconds, by tag"
is "$(json_get objects 1 name) $(json_get objects 1 holds)" 'bk/h@two {}' "one without holds has {}"
is "$(json_get objects 2 name) $(json_get objects 2 holds)" 'bk/h/c@one {"ferry-sync:bk2/h": 1709292600}' \
	"a child's snapshot its own"
is "$(json_get objects 0 properties userrefs value)" 2 "userrefs counts them"
req "$(tok r)" GET "/v1/datasets/bk/h?depth=0&types=filesystem"
is "$(json_get objects 0 holds)" null "a dataset has no holds member"

for o in "" "-r" "-H -p" "-r -p" "--json" "-r --json -p"; do
	# shellcheck disable=SC2086
	is "$("$FERRY" holds $o "$U@one" --token-file "$T/tok.r" 2>&1; echo "rc=$?")" \
		"$("$FERRY" holds $o bk/h@one 2>&1; echo "rc=$?")" \
		"ferry holds ${o:-(no option)} of a URL prints what it prints locally"
done
is "$("$FERRY" holds "$U@two" --token-file "$T/tok.r")" "$(ferry holds bk/h@two)" \
	"the header alone for a snapshot without holds"
refused 1 "cannot list '$U@nosuch': the server answered 404: .*does not exist" \
	"a snapshot that does not exist fails with one line" \
	"$FERRY" holds "$U@nosuch" --token-file "$T/tok.r"
refused 1 "403" "another dataset's holds are out of the token's scope" \
	"$FERRY" holds "$URL/bk/other@one" --token-file "$T/tok.r"
refused 2 "usage: ferry holds|snapshot URLs" "a URL without a snapshot is a usage error" \
	"$FERRY" holds "$U" --token-file "$T/tok.r"
is "$(ferry holds -H bk/h@one | cut -f1,2 | tr '\n' ' ')" "bk/h@one	ferry-sync:bk2/h bk/h@one	keep " \
	"and the holds are still there"
serve_stop
is "$serve_rc" 0 "the server stops cleanly"
done_testing
