/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "client-util.h"
#include "duration.h"

#define WHITESPACE " \t\n"

static const struct {
        const char *suffix;
        uint64_t usec;
} units[] = {
        { "us",      1               },
        { "usec",    1               },
        { "ms",      USEC_PER_MSEC   },
        { "msec",    USEC_PER_MSEC   },
        { "s",       USEC_PER_SEC    },
        { "sec",     USEC_PER_SEC    },
        { "second",  USEC_PER_SEC    },
        { "seconds", USEC_PER_SEC    },
        { "m",       USEC_PER_MINUTE },
        { "min",     USEC_PER_MINUTE },
        { "minute",  USEC_PER_MINUTE },
        { "minutes", USEC_PER_MINUTE },
        { "h",       USEC_PER_HOUR   },
        { "hr",      USEC_PER_HOUR   },
        { "hour",    USEC_PER_HOUR   },
        { "hours",   USEC_PER_HOUR   },
};

/* One number and its unit at *p (leading whitespace skipped by the caller):
 * its µs added to *total, *p moved past it; *ret_unit whether it had a unit,
 * *nonzero set if a digit other than 0 was given. */
static int parse_component(const char **p, uint64_t *total, bool *ret_unit, bool *nonzero) {
        const char *q = *p, *frac = NULL, *unit;
        size_t n_int = 0, n_frac = 0, n_unit;
        uint64_t whole = 0, mul = 0, sum, m;
        bool overflow = false;

        for (; *q >= '0' && *q <= '9'; q++, n_int++) {
                unsigned d = *q - '0';

                if (d > 0)
                        *nonzero = true;
                if (whole > (UINT64_MAX - d) / 10)
                        overflow = true;
                else
                        whole = whole * 10 + d;
        }

        if (*q == '.') {
                frac = ++q;
                for (; *q >= '0' && *q <= '9'; q++, n_frac++)
                        if (*q != '0')
                                *nonzero = true;
        }

        if (n_int + n_frac == 0)
                return -EINVAL;

        unit = q + strspn(q, WHITESPACE);
        for (n_unit = 0; (unit[n_unit] >= 'a' && unit[n_unit] <= 'z') || (unit[n_unit] >= 'A' && unit[n_unit] <= 'Z');
             n_unit++)
                ;
        if (n_unit == 0)
                mul = USEC_PER_SEC;
        else {
                for (size_t i = 0; i < ELEMENTSOF(units); i++)
                        if (strlen(units[i].suffix) == n_unit && memcmp(unit, units[i].suffix, n_unit) == 0) {
                                mul = units[i].usec;
                                break;
                        }
                if (mul == 0)
                        return -EINVAL;
                q = unit + n_unit;
        }

        if (overflow || whole > UINT64_MAX / mul)
                return -ERANGE;
        sum = whole * mul;

        /* The fraction, digit by digit, without floating point; digits below
         * the microsecond are dropped. */
        m = mul;
        for (size_t i = 0; i < n_frac && m >= 10; i++) {
                uint64_t add;

                m /= 10;
                add = (uint64_t) (frac[i] - '0') * m;
                if (sum > UINT64_MAX - add)
                        return -ERANGE;
                sum += add;
        }

        if (*total > UINT64_MAX - sum)
                return -ERANGE;
        *total += sum;
        *ret_unit = n_unit > 0;
        *p = q;
        return 0;
}

int parse_duration(const char *s, uint64_t *ret) {
        uint64_t total = 0;
        bool nonzero = false, unitless = false;
        size_t n = 0;
        int r;

        for (const char *p = s;;) {
                bool unit;

                p += strspn(p, WHITESPACE);
                if (!*p)
                        break;
                r = parse_component(&p, &total, &unit, &nonzero);
                if (r < 0)
                        return r;
                if (!unit)
                        unitless = true;
                n++;
        }

        /* "2min 3" may mean 3 s as systemd reads it, or a unit forgotten:
         * not guessed.  Alone, a number is seconds, as --help says. */
        if (n == 0 || (unitless && n > 1))
                return -EINVAL;

        /* A duration that is not zero but below the microsecond would read
         * as 0, which means "the default" to a timeout: refuse it. */
        if (total == 0 && nonzero)
                return -ERANGE;

        *ret = total;
        return 0;
}

/* "0", "123us", "1.5ms", "1.234s", "2min 3.5s", "1h 2min 0.5s" */
char *format_duration(char *buf, size_t size, uint64_t usec) {
        uint64_t h, min, sec, frac, unit;
        const char *suffix;
        int n = 0;

        if (usec == 0) {
                snprintf(buf, size, "0s"); /* with a unit, as every other duration printed */
                return buf;
        }

        if (usec < USEC_PER_MSEC) {
                snprintf(buf, size, "%" PRIu64 "us", usec);
                return buf;
        }

        if (usec < USEC_PER_SEC) {
                unit = USEC_PER_MSEC;
                suffix = "ms";
                sec = usec / USEC_PER_MSEC;
                frac = usec % USEC_PER_MSEC;
                h = min = 0;
        } else {
                unit = USEC_PER_SEC;
                suffix = "s";
                h = usec / USEC_PER_HOUR;
                min = usec % USEC_PER_HOUR / USEC_PER_MINUTE;
                sec = usec % USEC_PER_MINUTE / USEC_PER_SEC;
                frac = usec % USEC_PER_SEC;
        }

        if (h > 0)
                n += snprintf(buf + n, size - n, "%" PRIu64 "h ", h);
        if (h > 0 || min > 0)
                n += snprintf(buf + n, size - n, "%" PRIu64 "min ", min);

        if (frac == 0)
                snprintf(buf + n, size - n, "%" PRIu64 "%s", sec, suffix);
        else {
                /* unit is 10^3 or 10^6: print all digits, then drop the
                 * trailing zeros. */
                int width = unit == USEC_PER_SEC ? 6 : 3;
                char digits[8];

                snprintf(digits, sizeof(digits), "%0*" PRIu64, width, frac);
                for (int i = width - 1; i > 0 && digits[i] == '0'; i--)
                        digits[i] = 0;
                snprintf(buf + n, size - n, "%" PRIu64 ".%s%s", sec, digits, suffix);
        }

        return buf;
}

char *format_total(char *buf, size_t size, uint64_t usec) {
        const uint64_t day = 24 * USEC_PER_HOUR;
        uint64_t v;

        /* Each branch rounds to its last digit, and leaves to the next one
         * a value that its rounding carries into the next unit: 999.96 ms
         * is "1.00s", 59.996 s "1min 0.0s" (not "1000.0ms", "60.00s"). */
        if (usec == 0)
                snprintf(buf, size, "0s"); /* as status prints a zero duration */
        else if (usec < USEC_PER_MSEC)
                snprintf(buf, size, "%" PRIu64 "us", usec);
        else if (usec < USEC_PER_SEC && (v = (usec + 50) / 100) < 10 * 1000)
                snprintf(buf, size, "%" PRIu64 ".%" PRIu64 "ms", v / 10, v % 10);
        else if (usec < USEC_PER_MINUTE && (v = (usec + 5000) / 10000) < 100 * 60)
                snprintf(buf, size, "%" PRIu64 ".%02" PRIu64 "s", v / 100, v % 100);
        else if (usec < USEC_PER_HOUR && (v = (usec + 50000) / 100000) < 10 * 3600)
                snprintf(buf, size, "%" PRIu64 "min %" PRIu64 ".%" PRIu64 "s", v / 600, v % 600 / 10, v % 10);
        else if (usec < day) {
                /* Minutes cut, not rounded; 59min 59.96s, rounded above, is
                 * the hour. */
                uint64_t u = usec < USEC_PER_HOUR ? USEC_PER_HOUR : usec;

                snprintf(buf, size, "%" PRIu64 "h %" PRIu64 "min", u / USEC_PER_HOUR,
                         u % USEC_PER_HOUR / USEC_PER_MINUTE);
        } else
                snprintf(buf, size, "%" PRIu64 "d %" PRIu64 "h", usec / day, usec % day / USEC_PER_HOUR);
        return buf;
}
