/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "access.h"

static const char *const action_names[_ACCESS_ACTION_MAX] = {
        [ACCESS_READ] = "read",
        [ACCESS_FREEZE] = "freeze or thaw",
        [ACCESS_TRACK] = "track",
        [ACCESS_UNTRACK] = "untrack",
        [ACCESS_GROUP_TRIGGER] = "add a pressure trigger to",
        [ACCESS_SYSTEM_TRIGGER] = "add a system-wide pressure trigger",
        [ACCESS_REMOVE_TRIGGER] = "remove a pressure trigger",
};

const char *access_action_to_string(AccessAction a) {
        if (a < 0 || a >= _ACCESS_ACTION_MAX)
                return "change";
        return action_names[a];
}

static bool action_concerns_group(AccessAction a) {
        switch (a) {
        case ACCESS_FREEZE:
        case ACCESS_TRACK:
        case ACCESS_UNTRACK:
        case ACCESS_GROUP_TRIGGER:
                return true;
        default:
                return false;
        }
}

bool access_needs_owner(AccessAction a, uid_t caller) {
        return action_concerns_group(a) && caller != 0 && caller != ACCESS_UID_INVALID;
}

bool access_allowed(AccessAction a, uid_t caller, uid_t owner) {
        switch (a) {
        case ACCESS_READ:
                return true;
        case ACCESS_SYSTEM_TRIGGER:
        case ACCESS_REMOVE_TRIGGER:
                /* Anyone the bus can name; the trigger limits bound the cost. */
                return caller != ACCESS_UID_INVALID;
        case ACCESS_FREEZE:
        case ACCESS_TRACK:
        case ACCESS_UNTRACK:
        case ACCESS_GROUP_TRIGGER:
                if (caller == ACCESS_UID_INVALID)
                        return false;
                if (caller == 0)
                        return true;
                /* A group nobody owns (no cgroup.freeze, or gone) is root's. */
                return owner != ACCESS_UID_INVALID && owner == caller;
        default:
                return false; /* an action this table does not know: refuse */
        }
}

size_t access_first_denied(AccessAction a, uid_t caller, const uid_t *owners, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!access_allowed(a, caller, owners[i]))
                        return i;
        return n;
}

bool access_trigger_window_allowed(uid_t caller, uint64_t window_usec) {
        if (caller == 0)
                return true;
        return window_usec % ACCESS_UNPRIVILEGED_WINDOW_USEC == 0;
}
