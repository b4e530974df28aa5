#!/bin/sh
# ferry sync through a real sshd: a private sshd (its own config, host key
# and authorized_keys in the test directory) on a spare port of
# 127.0.0.1, the key forced to `ferry shell --scope bk/host1
# --append-only`. A full sync, incremental ones, a partial receive resumed
# over ssh; the forced command refuses a destroy and a path outside its
# scope. Skipped, saying why, where no sshd can be started.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/sync_lib.sh"
SSHD=/usr/sbin/sshd
skip() { echo "1..0 # SKIP $*"; exit 0; }
[ -x "$SSHD" ] || skip "no $SSHD (openssh-server is not installed)"
command -v ssh >/dev/null && command -v ssh-keygen >/dev/null || skip "no ssh client"
[ "$(id -u)" = 0 ] || skip "sshd needs root here"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ssh-keygen -q -t ed25519 -N '' -f "$T/hostkey" >/dev/null || skip "ssh-keygen failed"
ssh-keygen -q -t ed25519 -N '' -f "$T/id" >/dev/null
printf 'command="env FERRY_HOME=%s %s shell --scope bk/host1 --append-only",restrict %s\n' \
	"$FERRY_HOME" "$FERRY" "$(cat "$T/id.pub")" >"$T/authorized_keys"
chmod 600 "$T/authorized_keys"
cat >"$T/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $T/hostkey
PidFile $T/sshd.pid
AuthorizedKeysFile $T/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
LogLevel ERROR
EOF
# sshd's privilege separation directory
[ -d /run/sshd ] || mkdir -p /run/sshd
"$SSHD" -f "$T/sshd_config" -D -e 2>"$T/sshd.log" &
sshd=$!
trap 'kill "$sshd" 2>/dev/null; wait "$sshd" 2>/dev/null; lib_cleanup' EXIT
export FERRY_SSH="ssh -F /dev/null -i $T/id -o IdentitiesOnly=yes -o BatchMode=yes -o UserKnownHostsFile=$T/known -o StrictHostKeyChecking=accept-new -o ConnectTimeout=5"
# up when the forced command answers (the pools do not exist yet: any
# answer of ferry's will do)
i=0
until $FERRY_SSH -p "$port" root@127.0.0.1 "ferry list bk/host1" 2>&1 | grep -q "^ferry: "; do
	i=$((i + 1))
	if [ "$i" -ge 50 ] || ! kill -0 "$sshd" 2>/dev/null; then
		skip "sshd did not start on 127.0.0.1:$port: $(head -2 "$T/sshd.log" | tr '\n' ' ')"
	fi
	sleep 0.1
done
mkdir -p "$T/p" "$T/src"
ferry pool create tank "$T/p/tank"
ferry pool create -o compression=gzip-6 bk "$T/p/bk"
ferry create bk/host1
seq 1 30000 >"$T/src/n"
ferry create -o source="$T/src" tank/home
ferry snapshot tank/home@1
DEST=ssh://root@127.0.0.1:$port/bk/host1/home
syncj tank/home "$DEST"
is "$rc:$(cat "$T/sum")" "0:tank/home full 1 resumed=0 aborted=0 - @1" "a full sync through sshd"
echo 2 >>"$T/src/n"; ferry snapshot tank/home@2
echo 3 >>"$T/src/n"; ferry snapshot tank/home@3
syncj tank/home "$DEST"
is "$rc:$(cat "$T/sum")" "0:tank/home incremental 2 resumed=0 aborted=0 @1 @3" "an incremental one"
is "$(ferry holds -H tank/home@3 | cut -f2)" "ferry-sync:$DEST" "the hold names the ssh destination"
# a partial receive left on the far side is resumed over ssh
head -c 3000000 /dev/urandom >"$T/src/big"
ferry snapshot tank/home@4
ferry send -c -p -i @3 tank/home@4 2>/dev/null | head -c 1500000 | ferry recv -s bk/host1/home 2>/dev/null
syncj tank/home "$DEST"
is "$rc:$(cat "$T/sum")" "0:tank/home incremental 1 resumed=1 aborted=0 @3 @4" "a partial receive resumed through sshd"
# the forced command
run $FERRY_SSH -p "$port" root@127.0.0.1 "ferry destroy -r bk/host1/home"
like "$rc:$(cat "$T/err")" "^1:ferry: shell: 'ferry destroy' is not allowed here" "the forced command refuses a destroy"
run $FERRY_SSH -p "$port" root@127.0.0.1 "ferry list -r bk"
like "$rc:$(cat "$T/err")" "^1:ferry: shell: 'bk' is outside this key's scope" "and a path outside its scope"
run $FERRY_SSH -p "$port" root@127.0.0.1 "sh -c id"
like "$rc:$(cat "$T/err")" "^1:ferry: shell: this key runs only ferry commands" "and any other program"
is "$(ferry list -H -t snapshot -o name bk/host1/home | tr '\n' ' ')" \
	"bk/host1/home@1 bk/host1/home@2 bk/host1/home@3 bk/host1/home@4 " "the backup is whole"
same_as_source tank/home bk/host1/home "through sshd"
done_testing
