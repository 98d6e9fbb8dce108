/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* scan_helper_run(): every item done once, by both threads when the helper
 * wakes in time, by the caller alone when it does not (the caller never waits
 * for a helper that has not started), several jobs in a row, no helper at
 * all; and scan_helper_free() leaves the process with its one thread. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "scan-helper.h"
#include "test-util.h"

#define N 2000

typedef struct Item {
        atomic_int done;
        pthread_t by;
} Item;

typedef struct Job {
        pthread_t caller;
        unsigned delay_usec; /* per item: long enough for the helper to join in */
} Job;

static void do_item(void *items, size_t i, void *userdata) {
        Item *it = (Item *) items + i;
        const Job *j = userdata;

        atomic_fetch_add(&it->done, 1);
        it->by = pthread_self();
        if (j->delay_usec)
                usleep(j->delay_usec);
}

/* Runs one job over N items; returns how many the helper did. */
static unsigned run_job(ScanHelper *h, unsigned delay_usec) {
        Item *items = calloc(N, sizeof *items);
        Job job = { .caller = pthread_self(), .delay_usec = delay_usec };
        unsigned by_helper = 0, once = 0;

        CHECK(items != NULL);
        if (!items)
                return 0;
        scan_helper_run(h, N, do_item, items, &job);
        for (unsigned i = 0; i < N; i++) {
                once += atomic_load(&items[i].done) == 1;
                by_helper += !pthread_equal(items[i].by, job.caller);
        }
        CHECK(once == N); /* each item once, all done on return */
        free(items);
        return by_helper;
}

int main(void) {
        ScanHelper *h = NULL;
        unsigned by_helper = 0;

        CHECK(count_threads() == 1);
        CHECK_R(scan_helper_new(&h), 0);
        CHECK(h != NULL);
        CHECK(count_threads() == 2);

        /* Items that take a while: the helper wakes and takes its share (a
         * few tries, the machine may be busy). */
        for (int k = 0; k < 5 && by_helper == 0; k++)
                by_helper = run_job(h, 200);
        CHECK(by_helper > 0);
        CHECK(by_helper < N);

        /* Many jobs in a row, short ones: each complete, whoever did it. */
        for (int k = 0; k < 200; k++)
                (void) run_job(h, 0);

        scan_helper_free(h);
        CHECK(count_threads() == 1);

        /* Without a helper: all by the caller. */
        CHECK(run_job(NULL, 0) == 0);
        scan_helper_free(NULL);

        return test_summary("test-scan-helper");
}
