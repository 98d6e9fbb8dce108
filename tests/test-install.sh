#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Install the build into a DESTDIR and build a libfreezer program against it
# with what libfreezer.pc says:
#   - the header is <includedir>/libfreezer/freezer.h, not <includedir>/freezer.h
#     (a name another package could have);
#   - a program with #include <freezer.h> and one with
#     #include <libfreezer/freezer.h> both compile, with that installed header
#     (not the source tree's, nor one installed elsewhere), link against the
#     installed library and run.
#
# Usage: test-install.sh MESON BUILDDIR PKG_CONFIG CC [CC ARGS...]
# Exit status: 0 fine, 1 problems found.

set -u
LC_ALL=C
export LC_ALL

if [ $# -lt 4 ]; then
        echo "usage: $0 MESON BUILDDIR PKG_CONFIG CC [CC ARGS...]" >&2
        exit 1
fi
meson=$1
builddir=$2
pkgconfig=$3
shift 3
# The rest is the compiler's command ("ccache cc", say).

status=0
fail() {
        echo "FAIL: $*"
        status=1
}

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest

if ! "$meson" install -C "$builddir" --destdir "$dest" --no-rebuild >"$tmp/install.log" 2>&1; then
        echo "FAIL: meson install --destdir failed:"
        cat "$tmp/install.log"
        exit 1
fi

pc=$(find "$dest" -name libfreezer.pc)
if [ -z "$pc" ] || [ "$(echo "$pc" | wc -l)" -ne 1 ]; then
        echo "FAIL: not one libfreezer.pc installed: '$pc'"
        exit 1
fi

headers=$(find "$dest" -name freezer.h)
case $headers in
*/include/libfreezer/freezer.h) ;;
*) fail "freezer.h installed as '$headers', not as <includedir>/libfreezer/freezer.h" ;;
esac
if [ "$(echo "$headers" | wc -l)" -ne 1 ]; then
        fail "more than one freezer.h installed: $headers"
fi

# The .pc's paths are the prefix's; the sysroot puts them below DESTDIR.
PKG_CONFIG_PATH=$(dirname "$pc")
PKG_CONFIG_SYSROOT_DIR=$dest
export PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
if ! cflags=$("$pkgconfig" --cflags libfreezer) || ! libs=$("$pkgconfig" --libs libfreezer); then
        echo "FAIL: $pkgconfig --cflags/--libs libfreezer failed"
        exit 1
fi
libdir=$(dirname "$(dirname "$pc")")

for include in freezer.h libfreezer/freezer.h; do
        name=$(echo "$include" | tr '/.' '__')
        before=$status
        cat >"$tmp/$name.c" <<EOF
#include <stdio.h>
#include <$include>

int main(void) {
        /* Something from the header, and a call into the library. */
        printf("%d %s\n", FREEZER_DISPATCH_MAX > 0, freezer_last_error_name(NULL) ? "name" : "none");
        return 0;
}
EOF
        # shellcheck disable=SC2086 # the flags are words
        if ! "$@" -o "$tmp/$name" "$tmp/$name.c" $cflags $libs -MD -MF "$tmp/$name.d" >"$tmp/$name.log" 2>&1; then
                fail "#include <$include> with pkg-config's flags does not build:"
                cat "$tmp/$name.log"
                continue
        fi
        if ! grep -q "$dest/[^ ]*/include/libfreezer/freezer.h" "$tmp/$name.d"; then
                fail "#include <$include> did not take the installed header:"
                cat "$tmp/$name.d"
        fi
        if ! LD_LIBRARY_PATH=$libdir "$tmp/$name" >"$tmp/$name.out" 2>&1; then
                fail "the program with #include <$include> does not run:"
                cat "$tmp/$name.out"
        fi
        [ $status -eq "$before" ] && echo "ok: #include <$include>"
done

if [ $status -eq 0 ]; then
        echo "OK: freezer.h in <includedir>/libfreezer, both includes build with libfreezer.pc"
fi
exit $status
