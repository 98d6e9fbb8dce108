/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * example-async: freeze (or thaw) groups from an event loop without blocking it.
 *
 *   example-async [--address=ADDRESS|--private=SOCKET] [--thaw] [--timeout=DURATION] PATH...
 *
 * Starts one freezer_freeze_async() (or freezer_thaw_async()) per PATH at once
 * and prints each result as the daemon sends it, in the order the kernel
 * confirms, while the loop goes on ticking: a group that cannot finish
 * freezing holds up neither the loop nor the other groups. The loop waits on
 * the handle's fd and on freezer_get_timeout(), the two things libfreezer asks
 * of a caller's loop. Connects to the system bus (DBUS_SYSTEM_BUS_ADDRESS, if
 * set, names it), to the bus at ADDRESS (e.g. unix:path=/tmp/bus), or with
 * --private to freezerd's private socket (e.g. /run/freezerd/private).
 * DURATION is read as freezectl reads its --timeout= (client/duration.c:
 * "5s", "250ms", "1.5s", "2min 3s", a number alone is seconds); 0, the
 * default, is freezerd's DefaultTimeoutUSec.
 *
 * Built with the project, not installed: an example to copy from, which the
 * build keeps compiling under the project's warnings.  Copied out of the
 * tree, it needs client/duration.c, duration.h and client-util.h too (for
 * --timeout=), or a parser of its own in place of parse_duration().
 */

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "duration.h"
#include "freezer.h"

#define TICK_MSEC 500

typedef struct job {
        const char *path;
        uint64_t id;
        bool done;
} job;

static size_t n_done, n_failed;

static void on_done(freezer *f, const freezer_call_result *r, void *userdata) {
        job *j = userdata;

        (void) f;
        j->done = true;
        n_done++;
        if (r->error < 0) {
                n_failed++;
                printf("%s: failed: %s (%s)\n", j->path, r->error_message ?: strerror(-r->error),
                       r->error_name ?: "no D-Bus error");
        } else
                printf("%s: done\n", j->path);
}

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

/* poll()'s timeout: the next tick, or sooner if libfreezer has a deadline.
 * That is "now" (0) too when freezer_dispatch() stopped at its bound
 * (FREEZER_DISPATCH_MAX) with more to do: the loop does its other work, then
 * comes back for the rest. */
static int poll_timeout_msec(freezer *f) {
        uint64_t t, now = now_usec();
        int msec = TICK_MSEC;

        if (freezer_get_timeout(f, &t) > 0) {
                if (t <= now)
                        return 0;
                if ((t - now + 999) / 1000 < (uint64_t) msec)
                        msec = (int) ((t - now + 999) / 1000);
        }
        return msec;
}

#define USAGE "usage: %s [--address=ADDRESS|--private=SOCKET] [--thaw] [--timeout=DURATION] PATH...\n"

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "address", required_argument, NULL, 'a' },
                { "private", required_argument, NULL, 'p' },
                { "thaw",    no_argument,       NULL, 't' },
                { "timeout", required_argument, NULL, 'T' },
                {}
        };
        const char *address = NULL, *private_socket = NULL;
        uint64_t timeout_usec = 0;
        bool thaw = false;
        freezer *f = NULL;
        job *jobs;
        size_t n;
        int c, r, ticks = 0;

        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'a':
                        address = optarg;
                        break;
                case 'p':
                        private_socket = optarg;
                        break;
                case 't':
                        thaw = true;
                        break;
                case 'T':
                        /* Not strtod(), which reads "0x10", "1e3", "inf" and
                         * "nan" too: freezectl's DURATION, and its words. */
                        r = parse_duration(optarg, &timeout_usec);
                        if (r < 0) {
                                fprintf(stderr, "%s: --timeout=%s: %s\n" USAGE, argv[0], optarg,
                                        r == -ERANGE ? "duration out of range (from 1us to about 584,000 years; "
                                                       "0 means freezerd's default)"
                                                     : "invalid duration (e.g. 5s, 250ms, 1.5s, 2min 3s; a number "
                                                       "alone is seconds)",
                                        argv[0]);
                                return 2;
                        }
                        break;
                default:
                        return 2;
                }
        if (optind >= argc || (address && private_socket)) {
                fprintf(stderr, USAGE, argv[0]);
                return 2;
        }

        r = address          ? freezer_open_address(&f, address)
            : private_socket ? freezer_open_private(&f, private_socket)
                             : freezer_open_system(&f);
        if (r < 0) {
                fprintf(stderr, "Cannot connect to freezerd: %s\n", strerror(-r));
                return 1;
        }

        n = (size_t) (argc - optind);
        jobs = calloc(n, sizeof *jobs);
        if (!jobs) {
                freezer_close(f);
                return 1;
        }
        for (size_t i = 0; i < n; i++) {
                jobs[i].path = argv[optind + (int) i];
                r = thaw ? freezer_thaw_async(f, jobs[i].path, timeout_usec, 0, on_done, &jobs[i], &jobs[i].id)
                         : freezer_freeze_async(f, jobs[i].path, timeout_usec, 0, on_done, &jobs[i], &jobs[i].id);
                if (r < 0) {
                        /* Refused before it was sent: no callback will come. */
                        printf("%s: failed: %s\n", jobs[i].path, freezer_last_error_message(f) ?: strerror(-r));
                        jobs[i].done = true;
                        n_done++;
                        n_failed++;
                }
        }

        while (n_done < n) {
                /* POLLIN, and POLLOUT while a call is not written out yet (a
                 * large batch): asked again before every poll. */
                int events = freezer_get_events(f);
                struct pollfd p = { .fd = freezer_get_fd(f), .events = (short) (events > 0 ? events : POLLIN) };
                int msec = poll_timeout_msec(f);

                r = poll(&p, 1, msec);
                if (r < 0 && errno != EINTR)
                        break;
                if (r == 0 && msec > 0)
                        printf("(the loop is free: tick %d, %zu of %zu answered)\n", ++ticks, n_done, n);
                /* Also on a timeout: a call whose daemon never answers ends here. */
                r = freezer_dispatch(f);
                /* -ENOMEM is not fatal: the handle stays usable and asks
                 * again for what it could not keep, at once the first time,
                 * then up to 1 s later while that is lost again (the poll
                 * timeout above, from freezer_get_timeout(), says when). */
                if (r == -ENOMEM)
                        fprintf(stderr, "Out of memory, going on: %s\n", strerror(-r));
                else if (r < 0) {
                        fprintf(stderr, "Lost the connection to freezerd: %s\n", strerror(-r));
                        break;
                }
        }

        r = n_done == n && n_failed == 0 ? 0 : 1;
        for (size_t i = 0; i < n; i++)
                if (!jobs[i].done)
                        printf("%s: no answer\n", jobs[i].path);
        free(jobs);
        freezer_close(f);
        return r;
}
