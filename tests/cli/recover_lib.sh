# tests/cli/recover_lib.sh — sourced by the pool recover tests (170, 171):
# what a recover of pool tank must give back, and the restores to compare.

# state: what recover must give back (listing, properties, holds)
state() {
	ferry list -H -p -r -t all -o name,type,guid,createtxg,creation,used,referenced,logicalused,logicalreferenced,written,usedbysnapshots,compressratio,refcompressratio,volsize tank
	ferry get -H -p -r all tank | awk -F'\t' '$2 != "available"'
	for s in $(ferry list -H -r -t snapshot -o name tank); do ferry holds -H -p "$s"; done
}
snaps() { ferry list -H -r -t snapshot -o name tank; }
# restore_all DIR: every snapshot restored into DIR/<name with / and @ as _>
restore_all() {
	rm -rf "$1"; mkdir -p "$1"
	for s in $(snaps); do
		ferry restore "$s" "$1/$(echo "$s" | tr '/@' '__')" </dev/null || return 1
	done
}
# same_restores: every snapshot restores as it did before the damage
same_restores() {
	restore_all "$TS/now" || { echo "a restore failed"; return 1; }
	for s in $(snaps); do
		n=$(echo "$s" | tr '/@' '__')
		if [ -f "$TS/before/$n" ]; then
			cmp "$TS/before/$n" "$TS/now/$n" || return 1
		else
			"$FERRY_TOOLS/treecmp" "$TS/before/$n" "$TS/now/$n" </dev/null || return 1
		fi
	done
	[ "$(snaps | wc -l)" = "$(ls "$TS/before" | wc -l)" ]
}
