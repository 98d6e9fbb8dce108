/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the access policy (daemon/access.c): no bus, no cgroups. */
#include <stdio.h>

#include "access.h"
#include "util.h"
#include "test-util.h"

#define ALICE ((uid_t) 1000)
#define BOB ((uid_t) 1001)
#define NOBODY ((uid_t) 65534)
#define NONE ACCESS_UID_INVALID

/* Actions on a group: root anywhere, others only where they own cgroup.freeze. */
static const AccessAction group_actions[] = { ACCESS_FREEZE, ACCESS_TRACK, ACCESS_UNTRACK, ACCESS_GROUP_TRIGGER };

static void test_group_actions(void) {
        for (size_t i = 0; i < ELEMENTSOF(group_actions); i++) {
                AccessAction a = group_actions[i];

                /* root: any group, also one nobody owns (no cgroup.freeze, gone) */
                CHECK(access_allowed(a, 0, 0));
                CHECK(access_allowed(a, 0, ALICE));
                CHECK(access_allowed(a, 0, NONE));
                CHECK(!access_needs_owner(a, 0));

                /* the owner, and only the owner */
                CHECK(access_allowed(a, ALICE, ALICE));
                CHECK(!access_allowed(a, ALICE, BOB));
                CHECK(!access_allowed(a, ALICE, 0));
                CHECK(!access_allowed(a, ALICE, NONE));
                CHECK(access_allowed(a, NOBODY, NOBODY));
                CHECK(!access_allowed(a, NOBODY, 0));
                CHECK(access_needs_owner(a, ALICE));

                /* a caller the bus could not name: nothing, not even on "its" group */
                CHECK(!access_allowed(a, NONE, NONE));
                CHECK(!access_allowed(a, NONE, 0));
                CHECK(!access_allowed(a, NONE, ALICE));
                CHECK(!access_needs_owner(a, NONE));
        }
}

static void test_other_actions(void) {
        /* Reads: everyone, the unknown caller too; no owner needed. */
        CHECK(access_allowed(ACCESS_READ, 0, NONE));
        CHECK(access_allowed(ACCESS_READ, ALICE, BOB));
        CHECK(access_allowed(ACCESS_READ, NONE, NONE));
        CHECK(!access_needs_owner(ACCESS_READ, ALICE));

        /* System-wide triggers: anyone the bus can name, whatever the "owner". */
        CHECK(access_allowed(ACCESS_SYSTEM_TRIGGER, 0, NONE));
        CHECK(access_allowed(ACCESS_SYSTEM_TRIGGER, ALICE, NONE));
        CHECK(access_allowed(ACCESS_SYSTEM_TRIGGER, NOBODY, 0));
        CHECK(!access_allowed(ACCESS_SYSTEM_TRIGGER, NONE, NONE));
        CHECK(!access_needs_owner(ACCESS_SYSTEM_TRIGGER, ALICE));

        /* Removing a trigger: decided by connection elsewhere; any named caller here. */
        CHECK(access_allowed(ACCESS_REMOVE_TRIGGER, ALICE, NONE));
        CHECK(!access_allowed(ACCESS_REMOVE_TRIGGER, NONE, NONE));
        CHECK(!access_needs_owner(ACCESS_REMOVE_TRIGGER, ALICE));

        /* Unknown actions are refused, even to root. */
        CHECK(!access_allowed(_ACCESS_ACTION_MAX, 0, 0));
        CHECK(!access_allowed(_ACCESS_ACTION_INVALID, 0, 0));
        CHECK(!access_needs_owner(_ACCESS_ACTION_MAX, ALICE));
}

static void test_batches(void) {
        const uid_t mine[] = { ALICE, ALICE, ALICE };
        const uid_t mixed[] = { ALICE, 0, ALICE, BOB };
        const uid_t foreign_first[] = { BOB, ALICE };
        const uid_t unknown_last[] = { ALICE, NONE };

        /* Every group must pass; the first refused one is named. */
        CHECK(access_first_denied(ACCESS_FREEZE, ALICE, mine, 3) == 3);
        CHECK(access_first_denied(ACCESS_FREEZE, ALICE, mixed, 4) == 1);
        CHECK(access_first_denied(ACCESS_FREEZE, ALICE, foreign_first, 2) == 0);
        CHECK(access_first_denied(ACCESS_FREEZE, ALICE, unknown_last, 2) == 1);
        CHECK(access_first_denied(ACCESS_FREEZE, BOB, mixed, 4) == 0);
        /* root passes every batch */
        CHECK(access_first_denied(ACCESS_FREEZE, 0, mixed, 4) == 4);
        CHECK(access_first_denied(ACCESS_FREEZE, 0, unknown_last, 2) == 2);
        /* an unknown caller fails at the first group */
        CHECK(access_first_denied(ACCESS_FREEZE, NONE, mine, 3) == 0);
        /* an empty request changes nothing: nothing to refuse */
        CHECK(access_first_denied(ACCESS_FREEZE, ALICE, mine, 0) == 0);
        CHECK(access_first_denied(ACCESS_FREEZE, NONE, mine, 0) == 0);
}

static void test_windows(void) {
        /* root: anything (freezerd's own validation decides the range) */
        CHECK(access_trigger_window_allowed(0, 500000));
        CHECK(access_trigger_window_allowed(0, 1000000));
        CHECK(access_trigger_window_allowed(0, 2000000));
        /* others: what the kernel gives unprivileged openers */
        CHECK(!access_trigger_window_allowed(ALICE, 500000));
        CHECK(!access_trigger_window_allowed(ALICE, 1000000));
        CHECK(!access_trigger_window_allowed(ALICE, 2000001));
        CHECK(!access_trigger_window_allowed(ALICE, 3000000));
        CHECK(access_trigger_window_allowed(ALICE, 2000000));
        CHECK(access_trigger_window_allowed(ALICE, 4000000));
        CHECK(access_trigger_window_allowed(ALICE, 10000000));
        CHECK(!access_trigger_window_allowed(NONE, 1000000));
}

static void test_names(void) {
        CHECK(streq(access_action_to_string(ACCESS_FREEZE), "freeze or thaw"));
        CHECK(streq(access_action_to_string(ACCESS_TRACK), "track"));
        CHECK(streq(access_action_to_string(ACCESS_UNTRACK), "untrack"));
        CHECK(streq(access_action_to_string(_ACCESS_ACTION_MAX), "change"));
        CHECK(streq(access_action_to_string(_ACCESS_ACTION_INVALID), "change"));
        for (int a = 0; a < _ACCESS_ACTION_MAX; a++)
                CHECK(access_action_to_string(a) && access_action_to_string(a)[0]);
}

int main(void) {
        test_group_actions();
        test_other_actions();
        test_batches();
        test_windows();
        test_names();
        return test_summary("test-access");
}
