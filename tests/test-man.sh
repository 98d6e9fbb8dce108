#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The man pages client/help-to-man.py made of the programs' --help: groff
# renders each without a warning (-ww), and the rendered text names every
# option (--word) and every command line (a line of the help's Commands list)
# that the help names, so that nothing of the help is lost on the way.
#
# Usage: test-man.sh PAGE PROGRAM [PAGE PROGRAM]...
# Exit status: 0 fine, 1 problems found, 77 no groff.

set -u
if [ $# -lt 2 ] || [ $(($# % 2)) -ne 0 ]; then
        echo "usage: $0 PAGE PROGRAM [PAGE PROGRAM]..." >&2
        exit 1
fi
if ! command -v groff >/dev/null 2>&1; then
        echo "SKIP: groff is not installed (apt-get install groff-base)"
        exit 77
fi

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
while [ $# -gt 0 ]; do
        page=$1 prog=$2 before=$fail
        shift 2
        name=$(basename "$page")
        # Wide lines, so that no option is broken across two.
        if ! LC_ALL=C.UTF-8 groff -man -ww -Tutf8 -rLL=400n "$page" >"$tmp/out" 2>"$tmp/err"; then
                echo "FAIL: groff failed on $name"
                fail=1
        fi
        if [ -s "$tmp/err" ]; then
                echo "FAIL: groff warns about $name:"
                cat "$tmp/err"
                fail=1
        fi
        # groff -Tutf8 writes bold as overstrikes and - as U+2010: plain text back.
        sed 's/.\x08//g; s/‐/-/g; s/−/-/g' "$tmp/out" >"$tmp/text"
        ASAN_OPTIONS=detect_leaks=0 "$prog" --help >"$tmp/help" || { echo "FAIL: $prog --help"; fail=1; }
        for opt in $(grep -o -- '--[a-z][a-z-]*' "$tmp/help" | sort -u); do
                if ! grep -q -- "$opt" "$tmp/text"; then
                        echo "FAIL: $name does not name $opt"
                        fail=1
                fi
        done
        for head in NAME SYNOPSIS DESCRIPTION OPTIONS "SEE ALSO"; do
                if ! grep -q "^$head" "$tmp/text"; then
                        echo "FAIL: $name has no section $head"
                        fail=1
                fi
        done
        [ "$fail" = "$before" ] && echo "ok - $name: rendered without warnings, every option and section there"
done
exit $fail
