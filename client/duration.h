/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* freezectl's durations (--timeout=, a trigger's THRESHOLD and WINDOW, the
 * pressure totals), read and printed.  Pure, for the unit test (test-duration). */

#include <stddef.h>
#include <stdint.h>

/* A DURATION as --help describes it, in µs: one or more numbers, each with an
 * optional fraction and a unit (us, ms, s, min, h and the longer spellings
 * systemd.time(7) takes), summed, with optional whitespace before and after
 * each unit: "1.5s", "500ms", "2min 3s", "2min3s", "1h 0min 0.5s" (what
 * format_duration() prints reads back as the same value).  A lone number
 * without a unit is seconds ("5"); among several, a number without a unit
 * ("2min 3") is refused rather than guessed.  Digits below the microsecond
 * are dropped.  -EINVAL if malformed; -ERANGE if above UINT64_MAX µs, or not
 * zero but below 1 µs (it would read as 0). */
int parse_duration(const char *s, uint64_t *ret);

/* usec as "0s", "123us", "1.5ms", "1.234s", "2min 3.5s", "1h 0min 0.5s" in
 * buf (size bytes; 64 are plenty); returns buf. */
char *format_duration(char *buf, size_t size, uint64_t usec);

/* A stall total (freezectl pressure and watch) in about three significant
 * digits: "0s", "850us", "12.3ms", "4.56s", "12min 3.4s", "5h 12min",
 * "3d 4h", in buf (size bytes; 64 are plenty); returns buf.  Not
 * format_duration(): that one is exact to the microsecond ("1h 2min
 * 3.456789s"), so that what freezectl echoes (a trigger's THRESHOLD and
 * WINDOW) reads back as the value given; a total, looked at in a column and
 * grown at every read, is rounded (fixed decimals: "12.0ms" where
 * format_duration() says "12ms"), without its seconds past an hour, and in
 * days.  An option of format_duration() would change each of its branches. */
char *format_total(char *buf, size_t size, uint64_t usec);
