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
exit 0
