/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static int max_level = LOG_INFO;
static int prefix = -1; /* the "<N>" prefixes: 1 yes, 0 no, -1 not known yet */
static bool timestamps;  /* off the journal, to anything but a terminal */
/* The last message at LOG_ERR or worse of this thread (log_last_error()). */
static _Thread_local char last_error[512];

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

/* Whether stderr is the journal: as systemd's tools decide, by
 * $JOURNAL_STREAM ("DEV:INODE", set by systemd for a service whose stdout or
 * stderr it connects to journald) naming the file stderr is.  Only journald
 * reads the "<N>" prefixes; on a terminal, in a file or a pipe they are
 * noise, and an inherited $JOURNAL_STREAM names another file. */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        uintmax_t dev, ino;
        struct stat st;
        int n = 0;

        if (!e || sscanf(e, "%ju:%ju%n", &dev, &ino, &n) != 2 || e[n] != 0)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (uintmax_t) st.st_dev == dev && (uintmax_t) st.st_ino == ino;
}

void log_setup(void) {
        prefix = stderr_is_journal();
        /* journald stamps each line itself, and a terminal is read as it
         * comes; a file (StandardError=file:) or a pipe is read later. */
        timestamps = !prefix && !isatty(STDERR_FILENO);
        if (timestamps)
                tzset(); /* once, before any thread: localtime_r() need not */
}

const char *log_last_error(void) {
        return last_error[0] ? last_error : NULL;
}

void log_forget_last_error(void) {
        last_error[0] = 0;
}

/* The level as FREEZERD_LOG_LEVEL and syslog name it ("error" for LOG_ERR). */
static const char *level_word(int level) {
        static const char *const words[] = {
                [LOG_EMERG] = "emerg",     [LOG_ALERT] = "alert",   [LOG_CRIT] = "crit", [LOG_ERR] = "error",
                [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice", [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
        };

        return level >= 0 && level < (int) ELEMENTSOF(words) ? words[level] : "debug";
}

/* Off the journal, what comes before the message: "LEVEL: ", after an RFC 3339
 * local time with microseconds and a space ("2026-12-06T21:03:04.123456+01:00
 * warning: ") when stderr is not a terminal.  Without a level an operator
 * reading StandardError=file: could not tell a warning from the rest. */
static void format_head(int level, char *buf, size_t size) {
        char date[32], zone[8];
        struct timespec ts;
        struct tm tm;

        if (timestamps && clock_gettime(CLOCK_REALTIME, &ts) == 0 && localtime_r(&ts.tv_sec, &tm) &&
            strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm) > 0 && strftime(zone, sizeof zone, "%z", &tm) == 5)
                /* %z is "+0100", RFC 3339's "+01:00". */
                snprintf(buf, size, "%s.%06ld%.3s:%s %s: ", date, ts.tv_nsec / 1000, zone, zone + 3,
                         level_word(level));
        else
                snprintf(buf, size, "%s: ", level_word(level));
}

int log_internal(int level, int error, const char *file, int line, const char *func, const char *fmt, ...) {
        int saved = errno;
        if (error < 0)
                error = -error;

        if (level <= max_level) {
                char buf[2048], head[128];
                va_list ap;

                /* %m in the format refers to the error we were given, as in systemd. */
                errno = error;
                va_start(ap, fmt);
                vsnprintf(buf, sizeof buf, fmt, ap);
                va_end(ap);

                if (prefix < 0)
                        log_setup();
                if (prefix)
                        snprintf(head, sizeof head, "<%d>", level);
                else
                        format_head(level, head, sizeof head);
                /* One fprintf(), one write() (stderr is unbuffered) per line. */
                if (max_level >= LOG_DEBUG)
                        fprintf(stderr, "%s%s (%s:%d %s)\n", head, buf, file, line, func);
                else
                        fprintf(stderr, "%s%s\n", head, buf);
                if (level <= LOG_ERR) {
                        size_t n = strnlen(buf, sizeof last_error - 1);
                        memcpy(last_error, buf, n);
                        last_error[n] = 0;
                }
        }

        errno = saved;
        return -error;
}
