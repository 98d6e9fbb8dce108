/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>

#include "log.h"

static int max_level = LOG_INFO;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

int log_internal(int level, int error, const char *file, int line, const char *func, const char *fmt, ...) {
        int saved = errno;
        if (error < 0)
                error = -error;

        if (level <= max_level) {
                char buf[2048];
                va_list ap;

                /* %m in the format refers to the error we were given, as in systemd. */
                errno = error;
                va_start(ap, fmt);
                vsnprintf(buf, sizeof buf, fmt, ap);
                va_end(ap);

                if (max_level >= LOG_DEBUG)
                        fprintf(stderr, "<%d>%s (%s:%d %s)\n", level, buf, file, line, func);
                else
                        fprintf(stderr, "<%d>%s\n", level, buf);
        }

        errno = saved;
        return -error;
}
