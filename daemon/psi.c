/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>

#include "cgroup-util.h"
#include "psi.h"
#include "util.h"

static const char *const resource_table[_PSI_RESOURCE_MAX] = {
        [PSI_RESOURCE_CPU] = "cpu",
        [PSI_RESOURCE_MEMORY] = "memory",
        [PSI_RESOURCE_IO] = "io",
        [PSI_RESOURCE_IRQ] = "irq",
};

static const char *const kind_table[_PSI_KIND_MAX] = {
        [PSI_KIND_SOME] = "some",
        [PSI_KIND_FULL] = "full",
};

const char *psi_resource_to_string(PsiResource r) {
        if (r < 0 || r >= _PSI_RESOURCE_MAX)
                return NULL;
        return resource_table[r];
}

PsiResource psi_resource_from_string(const char *s) {
        if (!s)
                return _PSI_RESOURCE_INVALID;
        for (int i = 0; i < _PSI_RESOURCE_MAX; i++)
                if (streq(s, resource_table[i]))
                        return (PsiResource) i;
        return _PSI_RESOURCE_INVALID;
}

const char *psi_kind_to_string(PsiKind k) {
        if (k < 0 || k >= _PSI_KIND_MAX)
                return NULL;
        return kind_table[k];
}

PsiKind psi_kind_from_string(const char *s) {
        if (!s)
                return _PSI_KIND_INVALID;
        for (int i = 0; i < _PSI_KIND_MAX; i++)
                if (streq(s, kind_table[i]))
                        return (PsiKind) i;
        return _PSI_KIND_INVALID;
}

unsigned psi_resource_lines(PsiResource r) {
        return r == PSI_RESOURCE_IRQ ? PSI_LINE_FULL : PSI_LINE_SOME | PSI_LINE_FULL;
}

unsigned psi_resource_required_lines(PsiResource r) {
        switch (r) {
        case PSI_RESOURCE_IRQ:
                return PSI_LINE_FULL;
        case PSI_RESOURCE_CPU:
                /* Kernels 5.2 to 5.12 have no PSI_CPU_FULL: their cpu files
                 * print "some" alone, and a reading of them must work. */
                return PSI_LINE_SOME;
        default:
                return PSI_LINE_SOME | PSI_LINE_FULL;
        }
}

/* ---- parser ----------------------------------------------------------------------------------------- */

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

/* Digits only, at least one, no overflow; advances *p. */
static int parse_digits_u64(const char **p, const char *end, uint64_t *ret) {
        const char *s = *p;
        uint64_t v = 0;

        if (s >= end || !is_digit(*s))
                return -EBADMSG;
        for (; s < end && is_digit(*s); s++) {
                unsigned d = (unsigned) (*s - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -EBADMSG;
                v = v * 10 + d;
        }
        *p = s;
        *ret = v;
        return 0;
}

/* "<digits>[.<digits>]" without locale (strtod would honour LC_NUMERIC and
 * accept signs, exponents, "inf" and hex). */
static int parse_decimal(const char **p, const char *end, double *ret) {
        uint64_t ip, fp = 0;
        double scale = 1.0;
        int r;

        r = parse_digits_u64(p, end, &ip);
        if (r < 0)
                return r;
        if (*p < end && **p == '.') {
                const char *s = ++*p;
                if (s >= end || !is_digit(*s))
                        return -EBADMSG; /* "1." */
                /* Keep the precision the kernel prints; more digits must still be digits. */
                for (; *p < end && is_digit(**p); ++*p) {
                        if (*p - s >= 9)
                                continue;
                        fp = fp * 10 + (uint64_t) (**p - '0');
                        scale *= 10.0;
                }
        }
        /* (ip * 10^k + fp) / 10^k divides two exact integers: the double nearest to
         * the decimal, as strtod() would give ("1.14", not 1.1400000000000001). */
        if (ip < (UINT64_C(1) << 53) / (uint64_t) scale)
                *ret = (double) (ip * (uint64_t) scale + fp) / scale;
        else
                *ret = (double) ip + (double) fp / scale;
        return 0;
}

static int expect(const char **p, const char *end, const char *literal) {
        size_t l = strlen(literal);

        if ((size_t) (end - *p) < l || memcmp(*p, literal, l) != 0)
                return -EBADMSG;
        *p += l;
        return 0;
}

int psi_parse_line(const char *s, size_t n, PsiKind *ret_kind, PsiLine *ret) {
        const char *p = s, *end = s + n;
        PsiLine line = {};
        PsiKind kind;
        int r;

        if (!s)
                return -EBADMSG;
        if (expect(&p, end, "some ") == 0)
                kind = PSI_KIND_SOME;
        else if (expect(&p, end, "full ") == 0)
                kind = PSI_KIND_FULL;
        else
                return -EBADMSG;

        if ((r = expect(&p, end, "avg10=")) < 0 || (r = parse_decimal(&p, end, &line.avg10)) < 0 ||
            (r = expect(&p, end, " avg60=")) < 0 || (r = parse_decimal(&p, end, &line.avg60)) < 0 ||
            (r = expect(&p, end, " avg300=")) < 0 || (r = parse_decimal(&p, end, &line.avg300)) < 0 ||
            (r = expect(&p, end, " total=")) < 0 || (r = parse_digits_u64(&p, end, &line.total_usec)) < 0)
                return r;
        if (p != end)
                return -EBADMSG; /* trailing garbage, including a trailing space */

        if (ret_kind)
                *ret_kind = kind;
        if (ret)
                *ret = line;
        return 0;
}

int psi_parse(const char *buf, size_t len, unsigned required, PsiReading *ret) {
        PsiReading reading = {};
        const char *p, *end;
        int r;

        if (!buf && len > 0)
                return -EINVAL;
        if (!buf)
                return -EBADMSG;

        p = buf;
        end = buf + len;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *eol = nl ? nl : end;
                size_t n = (size_t) (eol - p);
                PsiKind kind;
                PsiLine line;

                if (n == 0 || memchr(p, '\0', n))
                        return -EBADMSG;
                if ((n >= 5 && (memcmp(p, "some ", 5) == 0 || memcmp(p, "full ", 5) == 0)) ||
                    (n == 4 && (memcmp(p, "some", 4) == 0 || memcmp(p, "full", 4) == 0))) {
                        r = psi_parse_line(p, n, &kind, &line);
                        if (r < 0)
                                return r;
                        if (reading.present & (1u << kind))
                                return -EBADMSG; /* the same line twice */
                        reading.line[kind] = line;
                        reading.present |= 1u << kind;
                }
                p = nl ? nl + 1 : end;
        }

        if ((reading.present & required) != required)
                return -EBADMSG;
        if (ret)
                *ret = reading;
        return 0;
}

void psi_clamp(PsiClamp *c, PsiReading *r) {
        for (int k = 0; k < _PSI_KIND_MAX; k++) {
                if (!(r->present & (1u << k)))
                        continue;
                if (r->line[k].total_usec < c->last_total[k])
                        r->line[k].total_usec = c->last_total[k];
                else
                        c->last_total[k] = r->line[k].total_usec;
        }
}

int psi_read_fd(int fd, PsiResource resource, PsiReading *ret) {
        char buf[512];
        ssize_t n;

        n = cg_read_fd(fd, buf, sizeof buf);
        if (n < 0)
                return (int) n;
        return psi_parse(buf, (size_t) n, psi_resource_required_lines(resource), ret);
}

/* ---- triggers ----------------------------------------------------------------------------------------- */

PsiTriggerError psi_trigger_validate(const char *resource, const char *kind, uint64_t threshold_usec,
                                     uint64_t window_usec, bool allow_irq, bool privileged,
                                     PsiResource *ret_resource, PsiKind *ret_kind) {
        PsiResource res = psi_resource_from_string(resource);
        PsiKind k;

        if (res < 0 || (res == PSI_RESOURCE_IRQ && !allow_irq))
                return PSI_TRIGGER_UNKNOWN_RESOURCE;
        if (ret_resource)
                *ret_resource = res;
        k = psi_kind_from_string(kind);
        if (k < 0)
                return PSI_TRIGGER_UNKNOWN_KIND;
        if (ret_kind)
                *ret_kind = k;
        /* A cpu "full" trigger passes here: whether the kernel has that
         * line is known from its file (pressure_trigger_add()). */
        if (!(psi_resource_lines(res) & (1u << k)))
                return PSI_TRIGGER_KIND_UNAVAILABLE;
        if (threshold_usec == 0)
                return PSI_TRIGGER_THRESHOLD_ZERO;
        if (window_usec < PSI_WINDOW_MIN_USEC)
                return PSI_TRIGGER_WINDOW_TOO_SHORT;
        if (window_usec > PSI_WINDOW_MAX_USEC)
                return PSI_TRIGGER_WINDOW_TOO_LONG;
        if (threshold_usec > window_usec)
                return PSI_TRIGGER_THRESHOLD_ABOVE_WINDOW;
        if (!privileged && window_usec % PSI_UNPRIVILEGED_WINDOW_STEP_USEC != 0)
                return PSI_TRIGGER_WINDOW_NOT_MULTIPLE;
        return PSI_TRIGGER_OK;
}

int psi_trigger_format(char *buf, size_t size, PsiKind kind, uint64_t threshold_usec, uint64_t window_usec) {
        const char *k = psi_kind_to_string(kind);
        int n;

        if (!k || !buf)
                return -EINVAL;
        n = snprintf(buf, size, "%s %" PRIu64 " %" PRIu64, k, threshold_usec, window_usec);
        if (n < 0 || (size_t) n >= size)
                return -ENOBUFS;
        return n;
}

uint64_t psi_trigger_settle_usec(uint64_t window_usec) {
        return 3 * window_usec + PSI_AVGS_PERIOD_USEC;
}

bool psi_event_plausible(uint64_t prev_total, uint64_t now_total, uint64_t threshold_usec) {
        if (now_total < prev_total)
                return false;
        return now_total - prev_total + 1 >= threshold_usec;
}

int psi_parse_cap_eff(const char *status, size_t len, unsigned cap) {
        const char *p = status, *end = status + len;

        if (!status || cap >= 64)
                return -EINVAL;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *eol = nl ? nl : end;

                if ((size_t) (eol - p) > 7 && memcmp(p, "CapEff:", 7) == 0) {
                        const char *s = p + 7;
                        uint64_t v = 0;
                        size_t digits = 0;

                        while (s < eol && (*s == '\t' || *s == ' '))
                                s++;
                        for (; s < eol; s++, digits++) {
                                int d;
                                if (*s >= '0' && *s <= '9')
                                        d = *s - '0';
                                else if (*s >= 'a' && *s <= 'f')
                                        d = *s - 'a' + 10;
                                else if (*s >= 'A' && *s <= 'F')
                                        d = *s - 'A' + 10;
                                else
                                        return -EBADMSG;
                                if (digits >= 16)
                                        return -EBADMSG;
                                v = (v << 4) | (uint64_t) d;
                        }
                        if (digits == 0)
                                return -EBADMSG;
                        return (int) ((v >> cap) & 1);
                }
                p = nl ? nl + 1 : end;
        }
        return -EBADMSG;
}

int psi_read_cap_eff_fd(int fd, unsigned cap) {
        char buf[4096];
        size_t have = 0;
        bool skip = false; /* in the rest of a line longer than buf: not CapEff's */

        if (fd < 0)
                return -EBADF;
        for (;;) {
                ssize_t k = read(fd, buf + have, sizeof buf - have);
                size_t start = 0;
                const char *nl;

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0) /* a last line without its newline */
                        return !skip && have > 7 && memcmp(buf, "CapEff:", 7) == 0
                                       ? psi_parse_cap_eff(buf, have, cap)
                                       : -EBADMSG;
                have += (size_t) k;
                while ((nl = memchr(buf + start, '\n', have - start))) {
                        size_t len = (size_t) (nl - (buf + start)) + 1;

                        if (!skip && len > 7 && memcmp(buf + start, "CapEff:", 7) == 0)
                                return psi_parse_cap_eff(buf + start, len, cap);
                        skip = false;
                        start += len;
                }
                memmove(buf, buf + start, have - start);
                have -= start;
                if (have == sizeof buf) {
                        skip = true;
                        have = 0;
                }
        }
}
