/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Unit tests of parse_duration(), format_duration() and format_total(). Exit
 * status 0 if all pass, 1 otherwise. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "client-util.h"
#include "duration.h"

static unsigned n_run, n_failed;

static void expect(const char *s, int want_r, uint64_t want) {
        uint64_t got = UINT64_MAX - 1;
        int r;

        n_run++;
        r = parse_duration(s, &got);
        if (r != want_r || (r == 0 && got != want)) {
                n_failed++;
                printf("FAIL: parse_duration(\"%s\"): %d %" PRIu64 ", expected %d %" PRIu64 "\n", s, r,
                       r == 0 ? got : 0, want_r, want_r == 0 ? want : 0);
        }
}

/* What format_duration() prints must read back as the same value: freezectl
 * status prints "Frozen in all: 2min 3s", which an operator may paste into
 * --timeout= (it was refused: one number and one unit only). */
static void round_trip(uint64_t usec) {
        char buf[64];
        uint64_t got = 0;
        int r;

        n_run++;
        format_duration(buf, sizeof buf, usec);
        r = parse_duration(buf, &got);
        if (r < 0 || got != usec) {
                n_failed++;
                printf("FAIL: %" PRIu64 " printed as \"%s\" reads back as %d %" PRIu64 "\n", usec, buf, r, got);
        }
}

static void total(uint64_t usec, const char *want) {
        char buf[64];

        n_run++;
        format_total(buf, sizeof buf, usec);
        if (!streq(buf, want)) {
                n_failed++;
                printf("FAIL: format_total(%" PRIu64 "): \"%s\", expected \"%s\"\n", usec, buf, want);
        }
}

int main(void) {
        static const uint64_t values[] = {
                0, 1, 999, 1000, 1001, 123456, 999999, 1000000, 1500000, 59999999, 60000000, 123000000,
                123500000, 3599999999, 3600000000, 3600500000, 3723000001, 86400000000, UINT64_MAX,
        };

        /* One number, one unit, as before. */
        expect("5", 0, 5 * USEC_PER_SEC);
        expect("250ms", 0, 250 * USEC_PER_MSEC);
        expect("1.5s", 0, 1500 * USEC_PER_MSEC);
        expect("500ms", 0, 500 * USEC_PER_MSEC);
        expect("2min", 0, 2 * USEC_PER_MINUTE);
        expect("2m", 0, 2 * USEC_PER_MINUTE);
        expect("1h", 0, USEC_PER_HOUR);
        expect("1hr", 0, USEC_PER_HOUR);
        expect("7us", 0, 7);
        expect("7usec", 0, 7);
        expect(".5s", 0, 500 * USEC_PER_MSEC);
        expect("1.s", 0, USEC_PER_SEC);
        expect("0", 0, 0);
        expect("0s", 0, 0);
        expect("1.0000009s", 0, USEC_PER_SEC); /* below the µs: dropped */

        /* Several, as systemd.time(7) writes them and status prints them. */
        expect("2min3s", 0, 123 * USEC_PER_SEC);
        expect("2min 3s", 0, 123 * USEC_PER_SEC);
        expect("2min 3.5s", 0, 123500 * USEC_PER_MSEC);
        expect("1h 0min 0.5s", 0, USEC_PER_HOUR + 500 * USEC_PER_MSEC);
        expect("1h30min", 0, 90 * USEC_PER_MINUTE);
        expect("2 min 3 s", 0, 123 * USEC_PER_SEC);
        expect(" 5s ", 0, 5 * USEC_PER_SEC);
        expect("1s 500ms", 0, 1500 * USEC_PER_MSEC);
        expect("2minutes 1second", 0, 121 * USEC_PER_SEC);
        expect("1 hour 2 minutes 3 seconds", 0, USEC_PER_HOUR + 123 * USEC_PER_SEC);
        expect("5s5s", 0, 10 * USEC_PER_SEC);

        /* Malformed. */
        expect("", -EINVAL, 0);
        expect(" ", -EINVAL, 0);
        expect("s", -EINVAL, 0);
        expect(".", -EINVAL, 0);
        expect("xyz", -EINVAL, 0);
        expect("5x", -EINVAL, 0);
        expect("5sx", -EINVAL, 0);
        expect("5 x", -EINVAL, 0);
        expect("-1s", -EINVAL, 0);
        expect("+1s", -EINVAL, 0);
        expect("1e3", -EINVAL, 0);
        expect("1..5s", -EINVAL, 0);
        expect("2min 3", -EINVAL, 0); /* 3 what? */
        expect("2 3", -EINVAL, 0);
        expect("1.5.3s", -EINVAL, 0);
        expect("5s,", -EINVAL, 0);
        expect("5S", -EINVAL, 0);

        /* Out of range. */
        expect("0.0000001s", -ERANGE, 0);
        expect("0.1us", -ERANGE, 0);
        expect("0min 0.0000001s", -ERANGE, 0);
        expect("18446744073709551615us", 0, UINT64_MAX);
        expect("18446744073709551616us", -ERANGE, 0);
        expect("18446744073709551615us 1us", -ERANGE, 0);
        expect("99999999999999999999h", -ERANGE, 0);
        expect("5124095577h", -ERANGE, 0); /* UINT64_MAX µs is 5124095576.03 h */

        for (size_t i = 0; i < ELEMENTSOF(values); i++)
                round_trip(values[i]);
        /* And a spread of every magnitude, with odd digits. */
        for (uint64_t v = 1; v < UINT64_MAX / 7; v = v * 7 + 3)
                round_trip(v);

        /* Stall totals: three digits or so, rounded. */
        total(0, "0s");
        total(1, "1us");
        total(999, "999us");
        total(1000, "1.0ms");
        total(12345, "12.3ms");
        total(850000, "850.0ms");
        total(999949, "999.9ms");
        total(4560000, "4.56s");
        total(59994999, "59.99s");
        total(60000000, "1min 0.0s");
        total(723400000, "12min 3.4s");
        total(3599940000, "59min 59.9s");
        total(3600000000, "1h 0min");
        total(18750000000, "5h 12min"); /* 5h 12min 30s: minutes cut */
        total(86399999999, "23h 59min");
        total(86400000000, "1d 0h");
        total(273600000000, "3d 4h");
        total(UINT64_MAX, "213503982d 8h");
        /* Rounded into the next unit, it is printed in that one (not
         * "1000.0ms", "60.00s", "1min 60.0s", "59min 60.0s"). */
        total(999950, "1.00s");
        total(999999, "1.00s");
        total(59999999, "1min 0.0s");
        total(119960000, "2min 0.0s");
        total(3599950000, "1h 0min");

        printf("%u of %u passed\n", n_run - n_failed, n_run);
        return n_failed ? 1 : 0;
}
