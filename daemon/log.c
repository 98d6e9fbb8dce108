/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

static int max_level = LOG_INFO;
static int prefix = -1; /* the "<N>" prefixes: 1 yes, 0 no, -1 not known yet */
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
}

const char *log_last_error(void) {
        return last_error[0] ? last_error : NULL;
}

void log_forget_last_error(void) {
        last_error[0] = 0;
}

int log_internal(int level, int error, const char *file, int line, const char *func, const char *fmt, ...) {
        int saved = errno;
        if (error < 0)
                error = -error;

        if (level <= max_level) {
                char buf[2048], pri[8] = "";
                va_list ap;

                /* %m in the format refers to the error we were given, as in systemd. */
                errno = error;
                va_start(ap, fmt);
                vsnprintf(buf, sizeof buf, fmt, ap);
                va_end(ap);

                if (prefix < 0)
                        log_setup();
                if (prefix)
                        snprintf(pri, sizeof pri, "<%d>", level);
                /* One fprintf(), one write() (stderr is unbuffered) per line. */
                if (max_level >= LOG_DEBUG)
                        fprintf(stderr, "%s%s (%s:%d %s)\n", pri, buf, file, line, func);
                else
                        fprintf(stderr, "%s%s\n", pri, buf);
                if (level <= LOG_ERR) {
                        size_t n = strnlen(buf, sizeof last_error - 1);
                        memcpy(last_error, buf, n);
                        last_error[n] = 0;
                }
        }

        errno = saved;
        return -error;
}
