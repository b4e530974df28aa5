# tests/cli/sync_lib.sh — helpers of the sync tests (sourced after lib.sh).

# syncj ARGS...: runs ferry sync --json ARGS; $rc its exit status, $T/out
# the JSON, $T/err its stderr, and in $T/sum one line per dataset:
# "SOURCE MODE SNAPSHOTS resumed=0|1 aborted=0|1 BASE NEWEST"
syncj() {
	"$FERRY" sync --json "$@" >"$T/out" 2>"$T/err"; rc=$?
	python3 -c '
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("no-json", e); sys.exit(0)
for x in d["datasets"]:
    print(x["source"], x["mode"], x["snapshots"], "resumed=%d" % x["resumed"],
          "aborted=%d" % x["aborted_partial"], x["base"] or "-", x["newest"] or "-")' "$T/out" >"$T/sum"
}

# same_as_source SRC DST DESC: gc on both pools, then every snapshot of DST
# (a dataset tree) restores byte for byte (metadata included) as the
# source's snapshot of the same name or, when $SAS_WANT is set, as the tree
# the test kept of it: $SAS_WANT/SNAP/REL for DST/REL@SNAP.
same_as_source() {
	_s=$1 _d=$2 _desc=$3 _bad=0 _sn=0
	"$FERRY" gc "${_s%%/*}" >/dev/null 2>&1 || { _bad=1; diag "gc ${_s%%/*} failed"; }
	"$FERRY" gc "${_d%%/*}" >/dev/null 2>&1 || { _bad=1; diag "gc ${_d%%/*} failed"; }
	"$FERRY" list -H -r -t snapshot -o name "$_d" >"$TS/sas" 2>/dev/null
	while IFS= read -r _x; do
		_rel=${_x#"$_d"}
		_sn=$((_sn + 1))
		rm -rf "$TS/sas-a" "$TS/sas-b"
		if ! "$FERRY" restore "$_x" "$TS/sas-a" </dev/null 2>"$T/err"; then
			_bad=1; diag "restore $_x: $(cat "$T/err")"; continue
		fi
		if [ -n "${SAS_WANT:-}" ]; then
			_w=$SAS_WANT/${_rel#*@}${_rel%@*}
		else
			_w=$TS/sas-b
			if ! "$FERRY" restore "$_s$_rel" "$_w" </dev/null 2>"$T/err"; then
				_bad=1; diag "restore $_s$_rel (for $_x): $(cat "$T/err")"; continue
			fi
		fi
		"$FERRY_TOOLS/treecmp" "$_w" "$TS/sas-a" >"$T/err" 2>&1 </dev/null ||
			{ _bad=1; diag "$_x differs from $_w: $(head -3 "$T/err")"; }
	done <"$TS/sas"
	rm -rf "$TS/sas-a" "$TS/sas-b"
	is "$_bad:$([ "$_sn" -gt 0 ] && echo some)" "0:some" "$_desc: after gc, all $_sn snapshots restore as the source had them"
}
