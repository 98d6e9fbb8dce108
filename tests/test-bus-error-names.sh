#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# No reply of freezerd's takes its name from sd-bus' errno map
# (sd_bus_error_set_errno(), _errnof()): EPERM and EACCES there read
# AccessDenied, the caller's refusal, EINVAL InvalidArgs, and most others
# System.Error.E*, which README and the interface XML do not list.  freezerd's
# own failures go through bus_error_set_failed() (daemon/bus-errors.h).  Only
# ENOMEM, spelt out (NoMemory, documented), may still go the errno's way.
#
# Usage: test-bus-error-names.sh DAEMON-SOURCE-DIR.  Exit status: 0 fine, 1 found.

set -u
LC_ALL=C
export LC_ALL

dir=${1:-$(dirname "$0")/../daemon}
found=$(grep -n 'sd_bus_error_set_errno\|sd_bus_reply_method_errno' "$dir"/*.c | grep -v 'sd_bus_error_set_errno(error, -ENOMEM);')
if [ -n "$found" ]; then
        echo "errno-named bus errors (use bus_error_set_failed()):" >&2
        echo "$found" >&2
        exit 1
fi

# Nor does a handler's (or a helper's with an sd_bus_error *) return of a plain
# errno, error left unset: sd-bus names the reply by that errno the same way.
# Only the literal case is caught (return -EINVAL;), not an r handed up from a
# function that sets no error.  Definitions start at column 0 and end at "}".
found=$(awk '
/^[A-Za-z_].*\(/ && !/;[ \t]*$/ { sig = $0; insig = 1; infn = 0 }
insig && !/^[A-Za-z_].*\(/ { sig = sig " " $0 }
insig && /\{[ \t]*$/ { insig = 0; infn = (sig ~ /sd_bus_error \*/) }
/^}/ { infn = 0 }
infn && /return -E[A-Z0-9]+[;)]/ && !/return -ENOMEM;/ { print FILENAME ":" FNR ":" $0 }
' "$dir"/*.c)
if [ -n "$found" ]; then
        echo "plain errnos returned with no bus error set (use bus_error_set_failed()):" >&2
        echo "$found" >&2
        exit 1
fi
exit 0
