/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Private helpers of libfreezer and freezectl, on top of those they share
 * with the daemon (daemon/common-util.h). Everything here is static inline or
 * a macro: nothing of it may end up in libfreezer's ABI. */

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/common-util.h"

#define USEC_PER_MINUTE ((uint64_t) (60ULL * USEC_PER_SEC))
#define USEC_PER_HOUR ((uint64_t) (60ULL * USEC_PER_MINUTE))

/* ApplyBatch's order argument, by freezer_order value (freezer.h): NULL if
 * there is no such order.  libfreezer sends it, freezectl parses --order= and
 * sends it over the wire. */
static inline const char *order_to_string(unsigned order) {
        static const char *const table[] = {"auto", "top-down", "bottom-up"};
        return order < ELEMENTSOF(table) ? table[order] : NULL;
}

/* The words for a path sd-bus will not carry (not UTF-8), the same whether
 * libfreezer or freezectl's wire client finds it. */
#define MESSAGE_PATH_NOT_UTF8 "The path is not valid UTF-8"
#define MESSAGE_REQUEST_NOT_UTF8 "Request %zu: the path is not valid UTF-8"

/* libfreezer's message for dbus-daemon's NoReply "Message recipient
 * disconnected ..." (freezerd left the bus with the call unanswered), which it
 * names Disconnected: freezectl tells it apart from a lost bus by it. */
#define MESSAGE_LEFT_BUS_UNANSWERED "freezerd left the bus without replying"

static inline const char *startswith(const char *s, const char *prefix) {
        size_t l = strlen(prefix);

        return strncmp(s, prefix, l) == 0 ? s + l : NULL;
}

/* sd-bus' default method-call timeout, which libfreezer leaves in place where
 * the daemon replies at once; freezectl's wire client and libfreezer's
 * handshake wait as long. */
#define SD_BUS_DEFAULT_TIMEOUT_USEC (25 * USEC_PER_SEC)

/* poll()'s timeout until deadline (CLOCK_MONOTONIC µs, as now_usec()):
 * milliseconds rounded up, 0 once it passed, -1 (none) for UINT64_MAX. */
static inline int poll_timeout_ms(uint64_t deadline) {
        uint64_t now, ms;

        if (deadline == UINT64_MAX)
                return -1;
        now = now_usec();
        ms = deadline > now ? (deadline - now + 999) / 1000 : 0;
        return ms > INT_MAX ? INT_MAX : (int) ms;
}

/* a + b, saturating at UINT64_MAX (which sd-bus and we read as "infinity"). */
static inline uint64_t usec_add(uint64_t a, uint64_t b) {
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* freezerd's name and its Manager object on the bus. */
#define FREEZER_SERVICE "org.freezerd.Freezer1"
#define FREEZER_MANAGER_PATH "/org/freezerd/Freezer1"
#define FREEZER_MANAGER_INTERFACE "org.freezerd.Freezer1.Manager"
/* A group's object: the prefix, and the group's path as one label
 * (sd_bus_path_encode()). */
#define FREEZER_GROUP_PREFIX "/org/freezerd/Freezer1/group"
#define FREEZER_GROUP_INTERFACE "org.freezerd.Freezer1.Group"

/* The method call waits this much longer than the daemon's own timeout, so that
 * the daemon's Timeout error wins over a local one. */
#define CALL_TIMEOUT_MARGIN_USEC (5 * USEC_PER_SEC)
/* The longest DefaultTimeoutUSec freezerd accepts (CONFIG_TIMEOUT_USEC_MAX in
 * daemon/config.c): a call with timeout 0 gets its answer within that. */
#define DAEMON_DEFAULT_TIMEOUT_MAX_USEC (24 * 60 * 60 * USEC_PER_SEC)

/* The method-call timeout of a call that waits up to timeout_usec in the
 * daemon. For 0, the daemon's DefaultTimeoutUSec, we wait as long as the
 * largest default the daemon accepts allows, instead of asking it for its
 * default first: that was one more round trip through the bus and the daemon
 * for every handle, a good part of what a short-lived "freezectl freeze"
 * costs. A daemon that goes away fails the call at once (the bus answers
 * NoReply); only a daemon that hangs keeps us waiting longer. */
static inline uint64_t call_timeout_usec(uint64_t timeout_usec) {
        return usec_add(timeout_usec > 0 ? timeout_usec : DAEMON_DEFAULT_TIMEOUT_MAX_USEC, CALL_TIMEOUT_MARGIN_USEC);
}

/* The method-call timeout of calls that wait for the kernel like Freeze/Thaw
 * do. With NO_WAIT the daemon replies at once: sd-bus' default method-call
 * timeout (0, i.e. 25 s) is plenty. */
static inline uint64_t wait_call_timeout_usec(uint64_t timeout_usec, bool no_wait) {
        return no_wait ? 0 : call_timeout_usec(timeout_usec);
}
