/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <math.h>
#include <sys/mman.h>

#include "psi.h"
#include "util.h"
#include "test-util.h"

#define BOTH (PSI_LINE_SOME | PSI_LINE_FULL)

static bool near(double a, double b) {
        return fabs(a - b) < 1e-9;
}

static int parse(const char *s, unsigned required, PsiReading *r) {
        return psi_parse(s, strlen(s), required, r);
}

static void test_good(void) {
        PsiReading r;

        CHECK_R(parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                      "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                      BOTH, &r),
                0);
        CHECK(r.present == BOTH);
        CHECK(r.line[PSI_KIND_SOME].total_usec == 0 && near(r.line[PSI_KIND_SOME].avg10, 0));

        CHECK_R(parse("some avg10=3.38 avg60=3.67 avg300=7.37 total=61923921\n"
                      "full avg10=100.00 avg60=0.05 avg300=12.5 total=18446744073709551615\n",
                      BOTH, &r),
                0);
        CHECK(near(r.line[PSI_KIND_SOME].avg10, 3.38));
        CHECK(near(r.line[PSI_KIND_SOME].avg60, 3.67));
        CHECK(near(r.line[PSI_KIND_SOME].avg300, 7.37));
        CHECK(r.line[PSI_KIND_SOME].total_usec == 61923921);
        CHECK(near(r.line[PSI_KIND_FULL].avg10, 100.0));
        CHECK(near(r.line[PSI_KIND_FULL].avg60, 0.05));
        CHECK(near(r.line[PSI_KIND_FULL].avg300, 12.5));
        CHECK(r.line[PSI_KIND_FULL].total_usec == UINT64_MAX);
        /* The nearest double, exactly as strtod() gives it. */
        CHECK_R(parse("some avg10=1.14 avg60=0.07 avg300=99.99 total=1\n"
                      "full avg10=0.1 avg60=2.30 avg300=0.00 total=0\n",
                      BOTH, &r),
                0);
        CHECK(r.line[PSI_KIND_SOME].avg10 == strtod("1.14", NULL));
        CHECK(r.line[PSI_KIND_SOME].avg60 == strtod("0.07", NULL));
        CHECK(r.line[PSI_KIND_SOME].avg300 == strtod("99.99", NULL));
        CHECK(r.line[PSI_KIND_FULL].avg10 == strtod("0.1", NULL));
        CHECK(r.line[PSI_KIND_FULL].avg60 == strtod("2.30", NULL));

        /* Integers without fraction, the last newline missing, lines in any order. */
        CHECK_R(parse("full avg10=1 avg60=2 avg300=3 total=4\nsome avg10=5 avg60=6 avg300=7 total=8", BOTH, &r), 0);
        CHECK(near(r.line[PSI_KIND_FULL].avg10, 1) && r.line[PSI_KIND_FULL].total_usec == 4);
        CHECK(near(r.line[PSI_KIND_SOME].avg300, 7) && r.line[PSI_KIND_SOME].total_usec == 8);

        /* irq: a full line only. */
        CHECK_R(parse("full avg10=0.12 avg60=0.00 avg300=0.00 total=1234\n", PSI_LINE_FULL, &r), 0);
        CHECK(r.present == PSI_LINE_FULL && r.line[PSI_KIND_FULL].total_usec == 1234);
        CHECK(r.line[PSI_KIND_SOME].total_usec == 0);

        /* A line of another kind is a future kernel's addition: ignored. */
        CHECK_R(parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=1\n"
                      "full avg10=0.00 avg60=0.00 avg300=0.00 total=2\n"
                      "other whatever=1\n",
                      BOTH, &r),
                0);
        CHECK(r.line[PSI_KIND_FULL].total_usec == 2);

        /* Not required lines are still parsed, and strictly. */
        CHECK_R(parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=1\n", 0, &r), 0);
        CHECK(r.present == PSI_LINE_SOME);
        CHECK_R(parse("", 0, &r), 0);
        CHECK(r.present == 0);
}

static void test_bad(void) {
        static const char *const bad[] = {
                /* a required line missing */
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "",
                /* a field missing, renamed, reordered, or doubled */
                "some avg10=0.00 avg60=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some avg10=0.00 avg60=0.00 avg300=0.00\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some avg10=0.00 avg60=0.00 avg300=0.00 totl=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some avg60=0.00 avg10=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=0 total=0\nfull avg10=0 avg60=0 avg300=0 total=0\n",
                /* bad numbers */
                "some avg10= avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some avg10=-1.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some avg10=+1.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some avg10=1. avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some avg10=.5 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some avg10=1e2 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some avg10=inf avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some avg10=0,50 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=-1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=0x10\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=18446744073709551616\n"
                "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                /* spacing */
                "some  avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some avg10=0.00  avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=0 \nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some avg10=0.00\tavg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                /* a line twice, an empty line */
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nsome avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                /* a truncated read */
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.0",
        };
        PsiReading r;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                int k = parse(bad[i], BOTH, &r);
                if (k != -EBADMSG) {
                        fprintf(stderr, "bad input %zu parsed (%d): %s\n", i, k, bad[i]);
                        test_failures++;
                }
        }

        /* A NUL byte inside. */
        static const char nul[] = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                                  "full avg10=0.00 avg60=0.00\0avg300=0.00 total=0\n";
        CHECK_R(psi_parse(nul, sizeof nul - 1, BOTH, &r), -EBADMSG);
        CHECK_R(psi_parse(NULL, 0, BOTH, &r), -EBADMSG);
        CHECK_R(psi_parse(NULL, 5, BOTH, &r), -EINVAL);

        /* irq with a required full line but only some */
        CHECK_R(parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", PSI_LINE_FULL, &r), -EBADMSG);
}

static void test_clamp(void) {
        PsiClamp c = {};
        PsiReading r = { .present = BOTH };

        r.line[PSI_KIND_SOME].total_usec = 100;
        r.line[PSI_KIND_FULL].total_usec = 50;
        psi_clamp(&c, &r);
        CHECK(r.line[PSI_KIND_SOME].total_usec == 100 && r.line[PSI_KIND_FULL].total_usec == 50);

        /* some goes backwards: reported as the last; full grows. */
        r.line[PSI_KIND_SOME].total_usec = 90;
        r.line[PSI_KIND_FULL].total_usec = 60;
        psi_clamp(&c, &r);
        CHECK(r.line[PSI_KIND_SOME].total_usec == 100);
        CHECK(r.line[PSI_KIND_FULL].total_usec == 60);
        CHECK(c.last_total[PSI_KIND_SOME] == 100 && c.last_total[PSI_KIND_FULL] == 60);

        /* and then grows past it */
        r.line[PSI_KIND_SOME].total_usec = 150;
        psi_clamp(&c, &r);
        CHECK(r.line[PSI_KIND_SOME].total_usec == 150 && c.last_total[PSI_KIND_SOME] == 150);

        /* An absent line is left alone (irq has no some). */
        r = (PsiReading) { .present = PSI_LINE_FULL };
        r.line[PSI_KIND_FULL].total_usec = 10;
        psi_clamp(&c, &r);
        CHECK(r.line[PSI_KIND_SOME].total_usec == 0);
        CHECK(r.line[PSI_KIND_FULL].total_usec == 60);
}

static void test_names(void) {
        CHECK(psi_resource_from_string("cpu") == PSI_RESOURCE_CPU);
        CHECK(psi_resource_from_string("memory") == PSI_RESOURCE_MEMORY);
        CHECK(psi_resource_from_string("io") == PSI_RESOURCE_IO);
        CHECK(psi_resource_from_string("irq") == PSI_RESOURCE_IRQ);
        CHECK(psi_resource_from_string("CPU") == _PSI_RESOURCE_INVALID);
        CHECK(psi_resource_from_string("") == _PSI_RESOURCE_INVALID);
        CHECK(psi_resource_from_string(NULL) == _PSI_RESOURCE_INVALID);
        CHECK(psi_kind_from_string("some") == PSI_KIND_SOME);
        CHECK(psi_kind_from_string("full") == PSI_KIND_FULL);
        CHECK(psi_kind_from_string("all") == _PSI_KIND_INVALID);
        CHECK(streq(psi_resource_to_string(PSI_RESOURCE_IO), "io"));
        CHECK(streq(psi_kind_to_string(PSI_KIND_FULL), "full"));
        CHECK(psi_resource_to_string(_PSI_RESOURCE_MAX) == NULL);
        CHECK(psi_resource_required_lines(PSI_RESOURCE_IRQ) == PSI_LINE_FULL);
        CHECK(psi_resource_required_lines(PSI_RESOURCE_CPU) == PSI_LINE_SOME);
        CHECK(psi_resource_required_lines(PSI_RESOURCE_MEMORY) == BOTH);
        CHECK(psi_resource_lines(PSI_RESOURCE_IRQ) == PSI_LINE_FULL);
        CHECK(psi_resource_lines(PSI_RESOURCE_CPU) == BOTH);
}

/* Kernels 5.2 to 5.12 print no "full" line for cpu (PSI_CPU_FULL came with
 * 5.13): such a file reads, without full figures; the line is still required
 * of memory and io, and a cpu "full" trigger still validates (the file says
 * whether the kernel has it).  Until session 46 every cpu reading failed
 * there as malformed. */
static void test_cpu_without_full(void) {
        static const char some_only[] = "some avg10=1.50 avg60=0.25 avg300=0.00 total=123456\n";
        _cleanup_close_ int fd = memfd_create("cpu.pressure", MFD_CLOEXEC);
        PsiReading r;

        CHECK(fd >= 0);
        CHECK(write(fd, some_only, strlen(some_only)) == (ssize_t) strlen(some_only));
        CHECK_R(psi_read_fd(fd, PSI_RESOURCE_CPU, &r), 0);
        CHECK(r.present == PSI_LINE_SOME);
        CHECK(near(r.line[PSI_KIND_SOME].avg10, 1.5) && r.line[PSI_KIND_SOME].total_usec == 123456);
        CHECK_R(psi_read_fd(fd, PSI_RESOURCE_MEMORY, &r), -EBADMSG);
        CHECK_R(psi_read_fd(fd, PSI_RESOURCE_IO, &r), -EBADMSG);
        /* A malformed full line is still malformed. */
        CHECK_R(parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00\n",
                      psi_resource_required_lines(PSI_RESOURCE_CPU), &r),
                -EBADMSG);
        CHECK(psi_trigger_validate("cpu", "full", 100000, 2000000, false, false, NULL, NULL) == PSI_TRIGGER_OK);
}

static void test_validate(void) {
        PsiResource res;
        PsiKind k;

        CHECK(psi_trigger_validate("cpu", "some", 100000, 2000000, false, false, &res, &k) == PSI_TRIGGER_OK);
        CHECK(res == PSI_RESOURCE_CPU && k == PSI_KIND_SOME);
        CHECK(psi_trigger_validate("memory", "full", 150000, 10000000, false, false, &res, &k) == PSI_TRIGGER_OK);
        CHECK(psi_trigger_validate("disk", "some", 1, 2000000, false, false, NULL, NULL) ==
              PSI_TRIGGER_UNKNOWN_RESOURCE);
        CHECK(psi_trigger_validate("irq", "full", 1, 2000000, false, false, NULL, NULL) ==
              PSI_TRIGGER_UNKNOWN_RESOURCE);
        CHECK(psi_trigger_validate("irq", "full", 1, 2000000, true, false, &res, &k) == PSI_TRIGGER_OK);
        CHECK(psi_trigger_validate("irq", "some", 1, 2000000, true, false, NULL, NULL) ==
              PSI_TRIGGER_KIND_UNAVAILABLE);
        CHECK(psi_trigger_validate("cpu", "most", 1, 2000000, false, false, NULL, NULL) ==
              PSI_TRIGGER_UNKNOWN_KIND);
        CHECK(psi_trigger_validate("cpu", "some", 0, 2000000, false, false, NULL, NULL) ==
              PSI_TRIGGER_THRESHOLD_ZERO);
        CHECK(psi_trigger_validate("cpu", "some", 1000, 499999, false, true, NULL, NULL) ==
              PSI_TRIGGER_WINDOW_TOO_SHORT);
        CHECK(psi_trigger_validate("cpu", "some", 1000, 0, false, true, NULL, NULL) == PSI_TRIGGER_WINDOW_TOO_SHORT);
        CHECK(psi_trigger_validate("cpu", "some", 1000, 10000001, false, true, NULL, NULL) ==
              PSI_TRIGGER_WINDOW_TOO_LONG);
        CHECK(psi_trigger_validate("cpu", "some", 12000000, 12000000, false, true, NULL, NULL) ==
              PSI_TRIGGER_WINDOW_TOO_LONG);
        CHECK(psi_trigger_validate("cpu", "some", 2000001, 2000000, false, false, NULL, NULL) ==
              PSI_TRIGGER_THRESHOLD_ABOVE_WINDOW);
        CHECK(psi_trigger_validate("cpu", "some", 2000000, 2000000, false, false, NULL, NULL) == PSI_TRIGGER_OK);
        CHECK(psi_trigger_validate("cpu", "some", 100000, 1000000, false, false, NULL, NULL) ==
              PSI_TRIGGER_WINDOW_NOT_MULTIPLE);
        CHECK(psi_trigger_validate("cpu", "some", 100000, 3000000, false, false, NULL, NULL) ==
              PSI_TRIGGER_WINDOW_NOT_MULTIPLE);
        CHECK(psi_trigger_validate("cpu", "some", 100000, 1000000, false, true, NULL, NULL) == PSI_TRIGGER_OK);
        CHECK(psi_trigger_validate("cpu", "some", 100000, 500000, false, true, NULL, NULL) == PSI_TRIGGER_OK);
}

static void test_format(void) {
        char buf[64], small[8];

        CHECK_R(psi_trigger_format(buf, sizeof buf, PSI_KIND_SOME, 150000, 2000000), 19);
        CHECK(streq(buf, "some 150000 2000000"));
        CHECK_R(psi_trigger_format(buf, sizeof buf, PSI_KIND_FULL, 1, 10000000), 15);
        CHECK(streq(buf, "full 1 10000000"));
        CHECK_R(psi_trigger_format(small, sizeof small, PSI_KIND_FULL, 1, 10000000), -ENOBUFS);
}

static void test_settle(void) {
        CHECK(psi_trigger_settle_usec(2000000) == 8000000);
        CHECK(psi_trigger_settle_usec(10000000) == 32000000);
}

static void test_plausible(void) {
        /* The event seen on 6.18 (threshold 500 ms): 149 ms since arming, then 370 ms since that event. */
        CHECK(!psi_event_plausible(7000000, 7149335, 500000));
        CHECK(!psi_event_plausible(7149335, 7519580, 500000));
        CHECK(psi_event_plausible(7149335, 9149335, 500000));
        CHECK(!psi_event_plausible(1000, 1000, 100000));
        CHECK(!psi_event_plausible(1000, 50000, 100000));
        CHECK(psi_event_plausible(1000, 101000, 100000));
        CHECK(psi_event_plausible(1000, 100999, 100000)); /* one usec of truncation */
        CHECK(!psi_event_plausible(1000, 100998, 100000));
        CHECK(!psi_event_plausible(5000, 1000, 1));
}

static void test_cap_eff(void) {
        static const char status[] = "Name:\tfreezerd\nCapInh:\t0000000000000000\n"
                                     "CapPrm:\t000001ffffffffff\nCapEff:\t000001fffeffffff\n";
        static const char full[] = "CapEff:\t000001ffffffffff\n";

        CHECK_R(psi_parse_cap_eff(status, strlen(status), 24), 0); /* CAP_SYS_RESOURCE dropped */
        CHECK_R(psi_parse_cap_eff(status, strlen(status), 21), 1);
        CHECK_R(psi_parse_cap_eff(full, strlen(full), 24), 1);
        CHECK_R(psi_parse_cap_eff("Name:\tx\n", 8, 24), -EBADMSG);
        CHECK_R(psi_parse_cap_eff("CapEff:\tzz\n", 11, 24), -EBADMSG);
        CHECK_R(psi_parse_cap_eff("CapEff:\t\n", 9, 24), -EBADMSG);
        CHECK_R(psi_parse_cap_eff("CapEff:\t00000000000000000\n", 26, 24), -EBADMSG);
}

/* status text in a pipe, read by psi_read_cap_eff_fd() (the writer end closed:
 * the reader sees the end of the file). */
static int read_cap_eff(const char *status, unsigned cap) {
        int fds[2];
        int r;

        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        CHECK(write(fds[1], status, strlen(status)) == (ssize_t) strlen(status));
        close(fds[1]);
        r = psi_read_cap_eff_fd(fds[0], cap);
        close(fds[0]);
        return r;
}

/* /proc/self/status beyond 4 KiB (a long Groups line; Cpus_allowed with many
 * possible CPUs): CapEff is still found (a whole-file read into 4 KiB failed
 * with EFBIG, and freezerd took itself for unprivileged). */
static void test_cap_eff_fd(void) {
        char big[16384], *p = big;

        CHECK_R(read_cap_eff("Name:\tx\nCapEff:\t000001fffeffffff\nSeccomp:\t0\n", 24), 0);
        CHECK_R(read_cap_eff("Name:\tx\nCapEff:\t000001ffffffffff\n", 24), 1);
        CHECK_R(read_cap_eff("Name:\tx\nCapEff:\t000001ffffffffff", 24), 1); /* no last newline */
        CHECK_R(read_cap_eff("Name:\tx\n", 24), -EBADMSG);
        CHECK_R(read_cap_eff("", 24), -EBADMSG);
        CHECK_R(psi_read_cap_eff_fd(-1, 24), -EBADF);

        /* Groups longer than the reader's buffer (its rest must not be taken
         * for a line of its own), CapEff beyond 8 KiB, a long tail. */
        p += sprintf(p, "Name:\tfreezerd\nGroups:\t");
        while (p - big < 6000)
                p += sprintf(p, "CapEff:\t0 ");
        p += sprintf(p, "\n");
        while (p - big < 8180)
                p += sprintf(p, "X:\t1\n");
        p += sprintf(p, "CapEff:\t000001ffffffffff\nCpus_allowed:\t");
        while (p - big < 16000)
                p += sprintf(p, "ffffffff,");
        sprintf(p, "\n");
        CHECK(strlen(big) > 8192);
        CHECK_R(read_cap_eff(big, 24), 1);
        CHECK_R(read_cap_eff(big, 63), 0);
}

/* The parser against the running kernel's own files, where it has them. */
static void test_live(void) {
        static const char *const files[] = { "/proc/pressure/cpu", "/proc/pressure/memory", "/proc/pressure/io",
                                             "/proc/pressure/irq" };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_close_ int fd = open(files[i], O_RDONLY | O_CLOEXEC);
                PsiReading r;
                if (fd < 0)
                        continue;
                int k = psi_read_fd(fd, (PsiResource) i, &r);
                if (k == -EOPNOTSUPP)
                        continue;
                CHECK_R(k, 0);
                /* A second read from offset 0 of the same fd works as well. */
                CHECK_R(psi_read_fd(fd, (PsiResource) i, &r), 0);
        }
}

int main(void) {
        test_good();
        test_bad();
        test_clamp();
        test_names();
        test_cpu_without_full();
        test_validate();
        test_format();
        test_settle();
        test_plausible();
        test_cap_eff();
        test_cap_eff_fd();
        test_live();

        return test_summary("test-psi");
}
