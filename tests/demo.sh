#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# usage: tests/demo.sh [BUILDDIR]      (as root, after building; default BUILDDIR: build)
#
# A short tour of freezerd on a private bus, over a scratch cgroup subtree:
#   /demo/app1   3 sleeping processes
#   /demo/app2   2 sleeping processes
# freezectl freezes /demo/app1 (and shows it over freezerd's private socket),
# busctl freezes /demo, both are shown and thawed.
# Everything (processes, cgroups, the daemons, temporary files) is removed on
# exit, also on ^C or error.
set -euo pipefail

SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$SRCDIR/build}
FREEZERD=$BUILD/daemon/freezerd
FREEZECTL=$BUILD/client/freezectl

die() { echo "demo: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run me as root (I create cgroups)"
[ -x "$FREEZERD" ] || die "$FREEZERD not found: build first (meson setup $BUILD && meson compile -C $BUILD)"
[ -x "$FREEZECTL" ] || die "$FREEZECTL not found: build first"
command -v dbus-daemon >/dev/null || die "dbus-daemon not found (apt-get install dbus-daemon)"
command -v busctl >/dev/null || die "busctl not found (apt-get install systemd)"
CG2=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$CG2" ] || die "no cgroup2 file system mounted"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/freezerd-demo.XXXXXX")
ROOT=$CG2/freezerd-demo-$$
BUS_PID='' DAEMON_PID=''

cleanup() {
        local rc=$? i
        trap - EXIT INT TERM
        set +e
        if [ -n "$DAEMON_PID" ]; then
                kill -TERM "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null
        fi
        # The READY=1 listener: a signal to this script alone (kill PID,
        # timeout(1)) does not reach it, and it would wait out its 20 s.
        if [ -n "${NOTIFY_PID:-}" ]; then
                kill -TERM "$NOTIFY_PID" 2>/dev/null && wait "$NOTIFY_PID" 2>/dev/null
        fi
        # SIGKILL everything below ROOT (frozen tasks too), and once it is
        # empty rmdir bottom-up; again while ROOT stays: a sleeper that spawn()
        # started but that joined its group only after the kill (^C right
        # after the start) keeps the group busy.  Once the groups are gone, a
        # late one cannot join and exits.
        for ((i = 0; i < 100; i++)); do
                [ -d "$ROOT" ] || break
                echo 1 > "$ROOT/cgroup.kill"
                if grep -q '^populated 0' "$ROOT/cgroup.events"; then
                        find "$ROOT" -depth -type d -exec rmdir {} + 2>/dev/null
                else
                        sleep 0.1
                fi
        done
        [ -d "$ROOT" ] && echo "demo: could not remove $ROOT" >&2
        if [ -n "$BUS_PID" ]; then
                kill -TERM "$BUS_PID" 2>/dev/null && wait "$BUS_PID" 2>/dev/null
        fi
        if [ "$rc" != 0 ] && [ -s "$TMP/freezerd.log" ]; then
                echo "--- freezerd log ---" >&2
                cat "$TMP/freezerd.log" >&2
        fi
        rm -rf "$TMP"
        exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -t 1 ]; then BOLD=$'\033[1m' PLAIN=$'\033[0m'; else BOLD='' PLAIN=''; fi
step() { printf '\n%s== %s%s\n' "$BOLD" "$*" "$PLAIN"; }
run() { # show the command with the bus address as $ADDR, then run it
        local cmd="$*"
        printf '$ %s\n' "${cmd//"$ADDR"/\$ADDR}"
        "$@"
}

# A private bus: dbus-daemon prints its address into a FIFO once it listens.
mkfifo "$TMP/address"
dbus-daemon --config-file="$SRCDIR/tests/dbus-test.conf" --nofork \
        --address="unix:path=$TMP/bus" --print-address=3 3>"$TMP/address" 2>"$TMP/dbus.log" &
BUS_PID=$!
read -r -t 10 ADDR <"$TMP/address" || die "dbus-daemon did not start: $(cat "$TMP/dbus.log")"

# The scratch tree and its processes (each joins its cgroup before exec'ing sleep).
mkdir -p "$ROOT/demo/app1" "$ROOT/demo/app2"
spawn() { # GROUP COUNT
        local i
        for ((i = 0; i < $2; i++)); do
                sh -c 'echo $$ > "$1/cgroup.procs" && exec sleep 1000000' sh "$ROOT$1" &
                disown
        done
}
spawn /demo/app1 3
spawn /demo/app2 2

# freezerd, with NOTIFY_SOCKET on a datagram socket that a small listener binds
# first; the listener exits once READY=1 arrives (freezerd owns its bus name then).
echo '{}' > "$TMP/freezerd.json"
coproc NOTIFY {
        exec /usr/bin/python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print("bound", flush=True)
s.settimeout(20)
try:
    while b"READY=1" not in s.recv(4096).split(b"\n"):
        pass
except socket.timeout:
    sys.exit(1)
' "$TMP/notify"
}
NOTIFY_OUT=${NOTIFY[0]}
read -r -t 10 _ <&"$NOTIFY_OUT" || die "the notify listener did not start"
NOTIFY_SOCKET=$TMP/notify "$FREEZERD" --address="$ADDR" --cgroup-root="$ROOT" \
        --config="$TMP/freezerd.json" --runtime-dir="$TMP" --state-dir="$TMP" \
        >"$TMP/freezerd.log" 2>&1 &
DAEMON_PID=$!
wait "$NOTIFY_PID" || die "freezerd did not get ready"

echo "bus:         ADDR=$ADDR"
echo "cgroup root: $ROOT"
BUSCTL=(busctl --address="$ADDR")
DEST=(org.freezerd.Freezer1 /org/freezerd/Freezer1 org.freezerd.Freezer1.Manager)

step "The tracked tree"
run "$FREEZECTL" --address="$ADDR" tree

step "Freeze /demo/app1 with freezectl (returns once the kernel says frozen)"
run "$FREEZECTL" --address="$ADDR" freeze /demo/app1
# Root may also skip dbus-daemon: freezerd's private socket (RUNTIME_DIR/private,
# by default /run/freezerd/private, which freezectl then uses by itself).
run "$FREEZECTL" --socket="$TMP/private" status /demo/app1
# The file's lines on one, joined by spaces (none left at the end), under a line
# that says these are not freezectl's output.
echo "(what the kernel says itself: app1's cgroup.events, and the state of each of its tasks)"
echo "kernel: $(paste -sd ' ' "$ROOT/demo/app1/cgroup.events")"
while read -r pid; do
        echo "pid $pid: $(awk '/^State:/ { print $2, $3 }' "/proc/$pid/status"), wchan $(cat "/proc/$pid/wchan")"
done <"$ROOT/demo/app1/cgroup.procs"

step "Freeze /demo with busctl: Manager.Freeze(path, timeout_usec, flags)"
run "${BUSCTL[@]}" call "${DEST[@]}" Freeze stt /demo 0 0
OBJ=$("${BUSCTL[@]}" call "${DEST[@]}" GetGroup s /demo/app2 | awk '{ gsub(/"/, "", $2); print $2 }')
run "${BUSCTL[@]}" get-property org.freezerd.Freezer1 "$OBJ" org.freezerd.Freezer1.Group FreezerState
run "$FREEZECTL" --address="$ADDR" tree

step "The objects on the bus"
run "${BUSCTL[@]}" tree org.freezerd.Freezer1

step "Thaw /demo: /demo/app1 stays frozen, it froze itself"
run "${BUSCTL[@]}" call "${DEST[@]}" Thaw stt /demo 0 0
run "$FREEZECTL" --address="$ADDR" tree

step "Thaw /demo/app1"
run "$FREEZECTL" --address="$ADDR" thaw /demo/app1
run "$FREEZECTL" --address="$ADDR" tree

step "Done: cleaning up"
