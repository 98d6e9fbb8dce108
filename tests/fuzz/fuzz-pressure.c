/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pressure (PSI) file parser: psi_parse() with each resource's required
 * lines and with none, psi_parse_line() on every line, psi_clamp() on what
 * was accepted, and psi_parse_cap_eff() (the /proc/PID/status reader of the
 * same module) on the same bytes.  Checked: only the documented return
 * values; accepted averages are finite and non-negative; the required lines
 * are present; each accepted line parses alone to the same values. */

#include <errno.h>
#include <math.h>

#include "fuzz-util.h"
#include "psi.h"

static void check_line(const PsiLine *l) {
        FUZZ_CHECK(isfinite(l->avg10) && l->avg10 >= 0);
        FUZZ_CHECK(isfinite(l->avg60) && l->avg60 >= 0);
        FUZZ_CHECK(isfinite(l->avg300) && l->avg300 >= 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *buf = fuzz_copy(data, size);
        PsiReading reading, any;
        PsiClamp clamp = {};
        int r, r_any;

        r_any = psi_parse(buf, size, 0, &any);
        FUZZ_CHECK(r_any == 0 || r_any == -EBADMSG);

        for (PsiResource res = 0; res < _PSI_RESOURCE_MAX; res++) {
                unsigned required = psi_resource_required_lines(res);

                memset(&reading, 0xaa, sizeof reading);
                r = psi_parse(buf, size, required, &reading);
                FUZZ_CHECK(r == 0 || r == -EBADMSG);
                FUZZ_CHECK(psi_parse(buf, size, required, NULL) == r);
                if (r < 0)
                        continue;

                /* Accepted with requirements implies accepted without. */
                FUZZ_CHECK(r_any == 0);
                FUZZ_CHECK((reading.present & required) == required);
                FUZZ_CHECK((reading.present & ~(PSI_LINE_SOME | PSI_LINE_FULL)) == 0);
                FUZZ_CHECK(reading.present == any.present);
                FUZZ_CHECK(memcmp(reading.line, any.line, sizeof reading.line) == 0);
                for (PsiKind k = 0; k < _PSI_KIND_MAX; k++)
                        if (reading.present & (1u << k))
                                check_line(&reading.line[k]);

                /* Totals never go backwards across clamps. */
                PsiReading copy = reading;
                psi_clamp(&clamp, &copy);
                for (PsiKind k = 0; k < _PSI_KIND_MAX; k++)
                        if (reading.present & (1u << k)) {
                                FUZZ_CHECK(copy.line[k].total_usec >= reading.line[k].total_usec);
                                FUZZ_CHECK(clamp.last_total[k] == copy.line[k].total_usec);
                        }
        }

        /* Every line on its own. */
        for (const char *p = buf, *end = buf + size; p < end;) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = (size_t) ((nl ? nl : end) - p);
                PsiLine line;
                PsiKind kind = _PSI_KIND_INVALID;

                r = psi_parse_line(p, n, &kind, &line);
                FUZZ_CHECK(r == 0 || r == -EBADMSG);
                if (r == 0) {
                        FUZZ_CHECK(kind == PSI_KIND_SOME || kind == PSI_KIND_FULL);
                        check_line(&line);
                        if (r_any == 0) {
                                /* The whole file was accepted: its line of this kind is this one
                                 * (each kind appears at most once). */
                                FUZZ_CHECK(any.present & (1u << kind));
                                FUZZ_CHECK(memcmp(&any.line[kind], &line, sizeof line) == 0);
                        }
                }
                p = nl ? nl + 1 : end;
        }

        /* CapEff of a status file: a bit 0..63. */
        for (unsigned cap = 0; cap < 64; cap += 21) {
                r = psi_parse_cap_eff(buf, size, cap);
                FUZZ_CHECK(r == 0 || r == 1 || r == -EBADMSG);
        }

        free(buf);
        return 0;
}
