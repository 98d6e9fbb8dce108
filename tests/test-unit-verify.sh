#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The systemd unit as meson generated it passes `systemd-analyze verify` with
# nothing to say: no unknown key, no unknown system call group, no missing
# dependency.  systemd-analyze exits 0 on such warnings, so any output fails
# the test.  ExecStart is pointed at the freezerd built here (verify checks that
# the command exists; the installed path need not).
#
# Usage: test-unit-verify.sh BUILT-UNIT FREEZERD
# Exit status: 0 fine, 1 problems found, 77 no systemd-analyze.

set -u
if [ $# -ne 2 ]; then
        echo "usage: $0 BUILT-UNIT FREEZERD" >&2
        exit 1
fi
if ! command -v systemd-analyze >/dev/null 2>&1; then
        echo "SKIP: systemd-analyze is not installed (apt-get install systemd)"
        exit 77
fi

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
unit=$tmp/freezerd.service
sed "s|^ExecStart=[^ ]*|ExecStart=$2|" "$1" >"$unit" || exit 1
grep -q "^ExecStart=$2 " "$unit" || { echo "FAIL: no ExecStart line to point at $2"; exit 1; }

out=$(systemd-analyze verify "$unit" 2>&1)
rc=$?
if [ $rc -ne 0 ] || [ -n "$out" ]; then
        echo "FAIL: systemd-analyze verify (exit $rc):"
        echo "$out"
        exit 1
fi
echo "PASS: systemd-analyze verify of $1 has nothing to say"
