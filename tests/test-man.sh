#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The man pages client/help-to-man.py made of the programs' --help: groff
# renders each without a warning (-ww); every item of the help's Commands and
# Options lists (its term: "freeze PATH...", "-h --help", "--timeout=DURATION")
# starts a line of the rendered page, as a .TP item does; every --option the
# help names anywhere is in the page; the usual sections are there; and
# every line of the page as man shows it on an 80-column terminal
# (MANWIDTH=80) fits in 80 columns (the help's own lines are 80 at most, but
# the page indents them: freezerd's "Keys:" list and freezectl's examples
# ran past it).
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

export LC_ALL=C.UTF-8
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
while [ $# -gt 0 ]; do
        page=$1 prog=$2 bad=0
        shift 2
        name=$(basename "$page")
        # Wide lines, so that nothing is broken across two; plain text (no
        # overstriking for bold or underline: -c -b -u); minus signs as "-".
        if ! groff -man -ww -Tutf8 -rLL=400n -P-c -P-b -P-u "$page" >"$tmp/out" 2>"$tmp/err"; then
                echo "FAIL: groff failed on $name"
                bad=1
        fi
        if [ -s "$tmp/err" ]; then
                echo "FAIL: groff warns about $name:"
                cat "$tmp/err"
                bad=1
        fi
        sed 's/‐/-/g; s/−/-/g' "$tmp/out" >"$tmp/text"
        ASAN_OPTIONS=detect_leaks=0 "$prog" --help >"$tmp/help" || { echo "FAIL: $prog --help"; bad=1; }

        # The items of Commands: and Options:, up to the blank line that ends each.
        awk '/^(Commands|Options):$/ { on = 1; next }
             /^$/ { on = 0 }
             on && /^ +[^ ]/ { match($0, /^ +/); if (RLENGTH <= 6) { sub(/^ +/, ""); sub(/  .*/, ""); print } }' \
                "$tmp/help" >"$tmp/items"
        if [ ! -s "$tmp/items" ]; then
                echo "FAIL: no Commands or Options items found in $prog --help"
                bad=1
        fi
        while IFS= read -r item; do
                if ! awk -v t="$item" 'index($0, "       " t) == 1 { found = 1 } END { exit !found }' "$tmp/text"; then
                        echo "FAIL: $name has no item \"$item\""
                        bad=1
                fi
        done <"$tmp/items"

        for opt in $(grep -o -- '--[a-z][a-z-]*' "$tmp/help" | sort -u); do
                if ! grep -q -- "$opt" "$tmp/text"; then
                        echo "FAIL: $name does not name $opt"
                        bad=1
                fi
        done
        # As man shows it (LC_ALL=C: plain ASCII, one byte a column; no
        # overstriking off a terminal), or as groff at man's line length for
        # that width where man is not installed.
        if command -v man >/dev/null 2>&1; then
                LC_ALL=C MANWIDTH=80 man -l "$page" >"$tmp/wide" 2>"$tmp/err"
        else
                LC_ALL=C groff -man -Tascii -rLL=78n -P-c -P-b -P-u "$page" >"$tmp/wide" 2>"$tmp/err"
        fi
        if [ ! -s "$tmp/wide" ]; then
                echo "FAIL: $name not rendered at MANWIDTH=80:"
                cat "$tmp/err"
                bad=1
        fi
        if awk 'length($0) > 80 { print "FAIL: '"$name"' at MANWIDTH=80: " length($0) " columns: " $0; n++ }
                END { exit !n }' "$tmp/wide"; then
                bad=1
        fi
        for head in NAME SYNOPSIS DESCRIPTION OPTIONS "SEE ALSO"; do
                if ! grep -q "^$head" "$tmp/text"; then
                        echo "FAIL: $name has no section $head"
                        bad=1
                fi
        done
        if [ $bad = 0 ]; then
                echo "ok - $name: no groff warning; $(wc -l <"$tmp/items") items, every option and section there"
        else
                fail=1
        fi
done
exit $fail
