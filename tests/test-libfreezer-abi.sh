#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Check libfreezer's dynamic symbol table against its public header:
#   - every defined dynamic symbol starts with freezer_ (no helper leaks),
#     apart from the version node itself (LIBFREEZER_*, an absolute symbol);
#   - where nm shows symbol versions, they are LIBFREEZER_*;
#   - every function declared in freezer.h is exported;
#   - every exported symbol is declared in freezer.h;
#   - where nm shows symbol versions, the symbols added after 0.3 are in the
#     version node of their release (LIBFREEZER_0.4, ...; see the table
#     below), every other one in LIBFREEZER_0: a symbol that moved nodes would
#     break programs linked against the old one.
#
# Usage: test-libfreezer-abi.sh LIBFREEZER.so [freezer.h]
# (the header defaults to ../client/freezer.h next to this script).
# $NM overrides the nm binary. Exit status: 0 fine, 1 problems found.

set -u
LC_ALL=C
export LC_ALL

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
        echo "usage: $0 LIBFREEZER.so [freezer.h]" >&2
        exit 1
fi

lib=$1
header=${2:-$(dirname "$0")/../client/freezer.h}
nm=${NM:-nm}
status=0

fail() {
        echo "FAIL: $*"
        status=1
}

if [ ! -r "$lib" ]; then
        echo "FAIL: cannot read library $lib"
        exit 1
fi
if [ ! -r "$header" ]; then
        echo "FAIL: cannot read header $header"
        exit 1
fi

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

if ! "$nm" -D --defined-only "$lib" >"$tmp/nm" 2>"$tmp/nm.err"; then
        echo "FAIL: $nm -D --defined-only $lib failed:"
        cat "$tmp/nm.err"
        exit 1
fi

# Lines are "VALUE TYPE NAME[@[@]VERSION]". Keep "TYPE NAME VERSION".
awk 'NF >= 3 {
        name = $3; version = "";
        i = index(name, "@");
        if (i > 0) {
                version = substr(name, i);
                sub(/^@+/, "", version);
                name = substr(name, 1, i - 1);
        }
        print $2, name, version;
}' "$tmp/nm" >"$tmp/syms"

: >"$tmp/exported"
while read -r type name version; do
        case $type:$name in
        A:LIBFREEZER_*)
                # The version node of the version script.
                continue
                ;;
        esac

        case $name in
        freezer_*)
                echo "$name" >>"$tmp/exported"
                ;;
        *)
                fail "exported symbol '$name' (type $type) does not start with freezer_"
                ;;
        esac

        if [ -n "$version" ]; then
                case $version in
                LIBFREEZER_*) ;;
                *) fail "symbol '$name' has version '$version', not LIBFREEZER_*" ;;
                esac
                # The node each symbol belongs in (libfreezer.sym).
                case $name in
                freezer_set_resync_callback) want=LIBFREEZER_0.4 ;;
                freezer_get_group_with_id | freezer_list_ids | freezer_group_id_array_free | freezer_get_cgroup_root | \
                        freezer_state_frozen) want=LIBFREEZER_0.6 ;;
                freezer_lookup_group) want=LIBFREEZER_0.7 ;;
                *) want=LIBFREEZER_0 ;;
                esac
                if [ "$version" != "$want" ]; then
                        fail "symbol '$name' has version '$version', expected '$want'"
                fi
        fi
done <"$tmp/syms"

sort -u "$tmp/exported" -o "$tmp/exported"

if [ ! -s "$tmp/exported" ]; then
        fail "$lib exports no freezer_ symbol at all"
fi

# Functions declared in the header: identifiers freezer_* directly followed by
# "(" once comments are stripped. The callback typedef "(*freezer_..._callback)("
# does not match, as a ")" follows its name.
tr '\n' ' ' <"$header" |
        sed -e 's#/\*\([^*]\|\*\+[^*/]\)*\*\+/# #g' |
        grep -o 'freezer_[A-Za-z0-9_]*[[:space:]]*(' |
        sed -e 's/[[:space:]]*($//' |
        sort -u >"$tmp/declared"

if [ ! -s "$tmp/declared" ]; then
        fail "no function declarations found in $header"
fi

for f in $(comm -23 "$tmp/declared" "$tmp/exported"); do
        fail "function '$f' is declared in $(basename "$header") but not exported"
done

for f in $(comm -13 "$tmp/declared" "$tmp/exported"); do
        fail "symbol '$f' is exported but not declared in $(basename "$header")"
done

if [ $status -eq 0 ]; then
        echo "OK: $(wc -l <"$tmp/exported") symbols exported, all declared in $(basename "$header"), none else"
fi

exit $status
