#!/bin/sh
# The hourly scenario, shorter, over ssh through a pseudo-ssh: FERRY_SSH is
# a script that runs what ssh would run for a key whose authorized_keys
# line forces `ferry shell --scope bk/host1 --append-only`, with the
# command in SSH_ORIGINAL_COMMAND. Snapshot, sync and prune every hour for
# two simulated days; the backup prunes itself by its properties; both
# sides keep what restic's rules keep. The forced command runs only what a
# sync needs, inside its scope: destroy, recv -F, paths outside the scope,
# shell syntax, other programs are refused with one line, changing nothing.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/sync_lib.sh"
W=$TS/w
mkdir -p "$W/p" "$W/src"
ferry pool create tank "$W/p/tank"
ferry pool create -o compression=gzip-6 bk "$W/p/bk"
ferry create bk/host1
ferry create bk/host2
ferry set ferry:keep-hourly=6 ferry:keep-daily=30 bk
for k in 0 1 2; do echo "init $k" >"$W/src/f$k"; done
ferry create -o source="$W/src" tank/home
# what sshd would run for the key: the forced command, the client's
# command in SSH_ORIGINAL_COMMAND (its arguments: [-p PORT] HOST COMMAND)
cat >"$T/ssh" <<EOF
#!/bin/sh
while [ \$# -gt 1 ]; do shift; done
SSH_ORIGINAL_COMMAND=\$1 exec "$FERRY" shell --scope bk/host1 --append-only
EOF
chmod +x "$T/ssh"
export FERRY_SSH=$T/ssh
DEST=ssh://backup@bk.example/bk/host1/home
HOURS=48
python3 -c '
import datetime
t = datetime.datetime(2024, 1, 1)
for h in range(48):
    u = t + datetime.timedelta(hours=h)
    print(h, u.strftime("%Y-%m-%dT%H:%M:%SZ"), u.strftime("auto-%Y%m%dT%H%M%SZ"))' >"$T/hours"
bad=0
while read -r h now name; do
	printf 'hour %s\n' "$h" >"$W/src/f$((h % 3))"
	export FERRY_NOW=$now
	"$FERRY" snapshot --auto tank/home
	mkdir -p "$TS/want/$name"; cp -a "$W/src/." "$TS/want/$name/"
	"$FERRY" sync --json tank/home "$DEST" >"$T/s.json" 2>"$T/s.err" || { bad=$((bad + 1)); diag "$h: $(cat "$T/s.err")"; }
	[ "$h" = 0 ] || grep -q '"mode": "incremental"' "$T/s.json" || { bad=$((bad + 1)); diag "$h: not incremental"; }
	"$FERRY" prune --keep-hourly 12 --keep-daily 7 tank/home >/dev/null
	# the backup server thins its clients itself; the client never could
	"$FERRY" prune -r bk >/dev/null
done <"$T/hours"
unset FERRY_NOW
is "$bad" 0 "48 hourly syncs over the pseudo-ssh, each after the first incremental"
python3 "$FERRY_SRC/tests/cli/prune_model.py" simulate "$HOURS" 2024-01-01T00:00:00Z hourly=12,daily=7 \
	hourly=6,daily=30 >"$T/model"
is "$(ferry list -H -t snapshot -o name tank/home | sed 's/.*@/src /')" "$(grep '^src' "$T/model")" \
	"the source kept what restic's rules keep"
is "$(ferry list -H -t snapshot -o name bk/host1/home | sed 's/.*@/dst /')" "$(grep '^dst' "$T/model")" \
	"the backup kept what restic's rules keep"
run ferry sync tank/home "$DEST"
like "$(cat "$T/out")" "^tank/home -> $DEST: up to date at @auto-20240102T230000Z$" "in sync"

# ---- the forced command -------------------------------------------------------------------
before=$(ferry list -H -p -r -t all -o name,guid bk)
shell() { # EXPECTED-RC REGEX DESC COMMAND [FLAGS]: runs COMMAND through the forced command
	_want=$1 _re=$2 _desc=$3 _cmd=$4 _fl=${5:---append-only}
	SSH_ORIGINAL_COMMAND=$_cmd "$FERRY" shell --scope bk/host1 $_fl >"$T/out" 2>"$T/err" </dev/null
	_rc=$?
	if [ "$_rc" = "$_want" ] && [ "$(wc -l <"$T/err")" -le 1 ] &&
		{ [ -z "$_re" ] || grep -Eq -- "$_re" "$T/err" "$T/out"; }; then
		ok "$_desc"
	else
		not_ok "$_desc"; diag "rc=$_rc (want $_want): $(cat "$T/err" "$T/out" | head -3)"
	fi
}
shell 1 "^ferry: shell: 'ferry destroy' is not allowed here \(only list, get, sync-state, send and recv\)$" \
	"destroy is refused" "ferry destroy -r bk/host1/home"
shell 1 "'ferry rollback' is not allowed" "rollback is refused" "ferry rollback -r bk/host1/home@x"
shell 1 "'bk/host2' is outside this key's scope" "a dataset outside the scope is refused" "ferry list -r bk/host2"
shell 1 "'bk' is outside this key's scope" "its parent too" "ferry get all bk"
shell 1 "'bk/host10' is outside this key's scope" "a prefix of the name is not the scope" "ferry list bk/host10"
shell 1 "'bk/host2/x' is outside this key's scope" "a receive outside the scope" "ferry recv -s bk/host2/x"
shell 1 "recv -F' is not allowed here: this key is append-only" "recv -F on an append-only key" \
	"ferry recv -s -F bk/host1/home"
shell 1 "shell syntax \(';'\)" "shell syntax is refused" "ferry list bk/host1; rm -rf /"
shell 1 "shell syntax \('\\\$'\)" "so is an expansion" 'ferry list $(echo bk)'
shell 1 "runs only ferry commands, not 'sh'" "another program" "sh -c 'ferry list bk/host1'"
shell 1 "no interactive shell" "no command: no shell" ""
shell 1 "option '--force' is not allowed here" "an unknown option" "ferry recv --force bk/host1/x"
shell 1 "not a dataset, snapshot or bookmark name" "a bad name" "ferry list 'bk/host1/../host2'"
shell 1 "'ferry recv' is not allowed here: this key is read-only" "a read-only key cannot receive" \
	"ferry recv -s bk/host1/y" --read-only
shell 0 "bk/host1/home" "a read-only key lists" "ferry list -H -o name bk/host1/home" --read-only
shell 0 "^ferry-sync-state	1$" "sync-state inside the scope runs" "ferry sync-state -r 'bk/host1'"
is "$(ferry list -H -p -r -t all -o name,guid bk)" "$before" "nothing changed on the backup"
# a resume token names its dataset: send -t of one outside the scope
head -c 3000000 /dev/urandom >"$W/src/big"
FERRY_NOW=2024-01-03T00:00:00Z ferry snapshot --auto tank/home
ferry send tank/home@auto-20240103T000000Z 2>/dev/null | head -c 2000000 | ferry recv -s bk/host1/p 2>/dev/null
tok=$(ferry get -H -o value receive_resume_token bk/host1/p)
shell 1 "'tank/home@auto-20240103T000000Z' is outside this key's scope" "send -t of a token naming another dataset" \
	"ferry send -t $tok"
shell 0 "" "recv -A of a partial receive inside the scope" "ferry recv -A bk/host1/p"
refused 1 "does not exist" "(it is gone)" ferry list bk/host1/p
# a sync out of scope, and -F through an append-only key
run ferry sync tank/home ssh://bk.example/bk/host2/home
like "$rc:$(cat "$T/err")" "^1:ferry: cannot sync .*: ferry sync-state on bk.example failed \(exit status 1\): ferry: shell: 'bk/host2/home' is outside this key's scope$" \
	"a sync outside the scope fails saying why"
mkdir -p "$W/o"; echo o >"$W/o/f"
ferry create -o source="$W/o" bk/host1/other
ferry snapshot bk/host1/other@theirs
run ferry sync -F tank/home ssh://bk.example/bk/host1/other
like "$rc:$(cat "$T/err")" "^1:.*recv -F' is not allowed here: this key is append-only" \
	"sync -F cannot replace through an append-only key"
is "$(ferry list -H -t snapshot -o name bk/host1/other)" "bk/host1/other@theirs" "and replaced nothing"
SAS_WANT=$TS/want same_as_source tank/home bk/host1/home "over the pseudo-ssh"
done_testing
