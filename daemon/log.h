/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Logging to stderr, with the "<N>" syslog priority prefixes that journald
 * understands (SyslogLevelPrefix=yes is the default for services) when
 * stderr is the journal ($JOURNAL_STREAM names it), as systemd's tools do.
 * Elsewhere "LEVEL: message", after "TIME " (RFC 3339, local, microseconds)
 * but on a terminal. */

#include <syslog.h>

#include "util.h"

/* Looks at stderr and $JOURNAL_STREAM once, before any thread: the first
 * message does it otherwise. */
void log_setup(void);
void log_set_max_level(int level);
int log_get_max_level(void);
/* The last message at LOG_ERR or worse that this thread logged since
 * log_forget_last_error(), without its prefix, or NULL: a failed start's reason,
 * for the callers it refuses (its message is always logged: "err" is the least
 * FREEZERD_LOG_LEVEL logs). */
const char *log_last_error(void);
void log_forget_last_error(void);

/* Returns -abs(error) so that callers can write "return log_error_errno(r, ...)". */
int log_internal(int level, int error, const char *file, int line, const char *func, const char *fmt, ...)
        _printf_(6, 7);

#define log_full_errno(level, error, ...) \
        log_internal((level), (error), __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_debug(...) log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, (e), __VA_ARGS__)
