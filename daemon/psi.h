/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Pressure stall information (Documentation/accounting/psi.rst): a strict
 * parser of the kernel's *.pressure files, the "total went backwards" clamp,
 * and the validation of trigger arguments.  Pure logic, no bus, no event
 * loop: unit-tested in tests/test-psi.c.
 *
 * A pressure file holds up to two lines, each exactly
 *     "<some|full> avg10=<d> avg60=<d> avg300=<d> total=<u>\n"
 * where <d> is a decimal with an optional fraction ("1.23", as the kernel
 * prints "%lu.%02lu") and <u> the cumulated stall time in microseconds. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum PsiResource {
        PSI_RESOURCE_CPU,
        PSI_RESOURCE_MEMORY,
        PSI_RESOURCE_IO,
        PSI_RESOURCE_IRQ,
        _PSI_RESOURCE_MAX,
        _PSI_RESOURCE_INVALID = -1,
} PsiResource;

typedef enum PsiKind {
        PSI_KIND_SOME,
        PSI_KIND_FULL,
        _PSI_KIND_MAX,
        _PSI_KIND_INVALID = -1,
} PsiKind;

/* Bits of the "required" mask of psi_parse(). */
#define PSI_LINE_SOME (1u << PSI_KIND_SOME)
#define PSI_LINE_FULL (1u << PSI_KIND_FULL)

typedef struct PsiLine {
        double avg10, avg60, avg300; /* percentages */
        uint64_t total_usec;
} PsiLine;

typedef struct PsiReading {
        PsiLine line[_PSI_KIND_MAX]; /* indexed by PsiKind; zeros where absent */
        unsigned present;            /* PSI_LINE_* bits of the lines the file had */
} PsiReading;

/* The last totals reported for one pressure file, to clamp totals that go
 * backwards.  Zero-initialized means "nothing reported yet". */
typedef struct PsiClamp {
        uint64_t last_total[_PSI_KIND_MAX];
} PsiClamp;

/* Trigger limits of the kernel (kernel/sched/psi.c). */
#define PSI_WINDOW_MIN_USEC ((uint64_t) 500000)
#define PSI_WINDOW_MAX_USEC ((uint64_t) 10000000)
/* Without CAP_SYS_RESOURCE a trigger's window must be a multiple of this. */
#define PSI_UNPRIVILEGED_WINDOW_STEP_USEC ((uint64_t) 2000000)

/* "cpu", "memory", "io", "irq" and back; from_string gives _PSI_RESOURCE_INVALID
 * for anything else (exact, case-sensitive). */
const char *psi_resource_to_string(PsiResource r);
PsiResource psi_resource_from_string(const char *s);
/* "some", "full". */
const char *psi_kind_to_string(PsiKind k);
PsiKind psi_kind_from_string(const char *s);

/* The lines a resource's file may have: irq has only "full", the others both. */
unsigned psi_resource_lines(PsiResource r);
/* The lines a resource's file must have: irq "full", cpu "some" (its "full"
 * came with Linux 5.13: 5.2 to 5.12 print none, which is no malformed file),
 * memory and io both. */
unsigned psi_resource_required_lines(PsiResource r);

/* Parse a pressure file.  Every line whose first word is "some" or "full" must
 * be exactly of the form above (the four fields in that order, single spaces,
 * decimal digits, no sign, no overflow, nothing after total); each of them may
 * appear at most once; every line named in required must be present.  Lines
 * starting with another word are ignored (a future kernel's additions), but
 * an empty line or a NUL byte is an error.  The last line may lack its
 * newline.  Returns 0, or -EBADMSG for a malformed file (never zeros in its
 * place), -EINVAL for a NULL buffer with a length. */
int psi_parse(const char *buf, size_t len, unsigned required, PsiReading *ret);

/* Parse one line without its newline ("some avg10=..."): the kind and the values. */
int psi_parse_line(const char *s, size_t n, PsiKind *ret_kind, PsiLine *ret);

/* Replace each present total below the last one reported by the last one,
 * and remember the result: totals never go backwards across calls. */
void psi_clamp(PsiClamp *c, PsiReading *r);

/* pread() fd from offset 0 and parse it (psi_parse() with the resource's
 * required lines).  -EOPNOTSUPP when PSI is disabled (old kernels with
 * psi=0), -ENODEV when the cgroup was removed, -EBADMSG when malformed. */
int psi_read_fd(int fd, PsiResource resource, PsiReading *ret);

/* Why a trigger's arguments are refused, each with its own message. */
typedef enum PsiTriggerError {
        PSI_TRIGGER_OK,
        PSI_TRIGGER_UNKNOWN_RESOURCE,
        PSI_TRIGGER_UNKNOWN_KIND,
        PSI_TRIGGER_KIND_UNAVAILABLE,   /* irq has no "some" */
        PSI_TRIGGER_THRESHOLD_ZERO,
        PSI_TRIGGER_WINDOW_TOO_SHORT,   /* below PSI_WINDOW_MIN_USEC */
        PSI_TRIGGER_WINDOW_TOO_LONG,    /* above PSI_WINDOW_MAX_USEC */
        PSI_TRIGGER_THRESHOLD_ABOVE_WINDOW,
        PSI_TRIGGER_WINDOW_NOT_MULTIPLE, /* unprivileged: not a whole multiple of 2 s */
        _PSI_TRIGGER_ERROR_MAX,
} PsiTriggerError;

/* Validate a trigger's arguments in the order of the enum above; allow_irq
 * says whether "irq" is a resource here (the Manager), privileged whether
 * the daemon has CAP_SYS_RESOURCE.  The parsed resource and kind are stored
 * where valid. */
PsiTriggerError psi_trigger_validate(const char *resource, const char *kind, uint64_t threshold_usec,
                                     uint64_t window_usec, bool allow_irq, bool privileged,
                                     PsiResource *ret_resource, PsiKind *ret_kind);

/* The trigger string written to the pressure file, "<kind> <threshold> <window>"
 * (NUL-terminated; write strlen()+1 bytes).  Returns the length without the NUL,
 * or -ENOBUFS. */
int psi_trigger_format(char *buf, size_t size, PsiKind kind, uint64_t threshold_usec, uint64_t window_usec);

/* The kernel updates unprivileged triggers (and the averages) every 2 s. */
#define PSI_AVGS_PERIOD_USEC ((uint64_t) 2000000)

/* How long after arming an unprivileged trigger the kernel may still send
 * events that come from its wrong window start (see pressure.h): the first
 * window, the next one (which interpolates the first one's growth), and one
 * more window plus one update period for an event the rate limit deferred. */
uint64_t psi_trigger_settle_usec(uint64_t window_usec);

/* Whether an event of a trigger can be delivered: the kind's total grew by at
 * least threshold since prev_total (the total at the trigger's previous event,
 * or when it was armed).  One microsecond of slack absorbs the kernel's
 * truncation of nanoseconds in the file. */
bool psi_event_plausible(uint64_t prev_total, uint64_t now_total, uint64_t threshold_usec);

/* CapEff from a /proc/PID/status text: whether capability cap is effective.
 * -EBADMSG if the line is missing or malformed. */
int psi_parse_cap_eff(const char *status, size_t len, unsigned cap);
/* The same, read from fd (/proc/self/status) line by line: the file has no
 * bound on its size (Groups, and Cpus_allowed with many possible CPUs, can
 * take it beyond 4 KiB; a whole-file read of a fixed size then failed), and
 * CapEff comes early.  -errno of the read. */
int psi_read_cap_eff_fd(int fd, unsigned cap);
