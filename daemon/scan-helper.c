/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "scan-helper.h"

/* Items taken at a time: a few system calls' worth, so that the two threads
 * share a listing's end evenly without a fetch per item. */
#define SCAN_CHUNK 4

struct ScanHelper {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t posted_cond, done_cond;
        /* Under lock: a job is posted, the helper took it, it did its part. */
        bool posted, taken, done, quit;
        size_t n;
        scan_item_fn fn;
        void *items, *userdata;
        atomic_size_t next; /* the next item not taken */
};

static void run_items(ScanHelper *h, size_t n, scan_item_fn fn, void *items, void *userdata) {
        for (;;) {
                size_t i = atomic_fetch_add_explicit(&h->next, SCAN_CHUNK, memory_order_relaxed);
                if (i >= n)
                        return;
                for (size_t end = i + SCAN_CHUNK < n ? i + SCAN_CHUNK : n; i < end; i++)
                        fn(items, i, userdata);
        }
}

static void *helper_main(void *arg) {
        ScanHelper *h = arg;

        pthread_mutex_lock(&h->lock);
        for (;;) {
                while (!(h->posted && !h->taken) && !h->quit)
                        pthread_cond_wait(&h->posted_cond, &h->lock);
                if (h->quit)
                        break;
                h->taken = true;
                size_t n = h->n;
                scan_item_fn fn = h->fn;
                void *items = h->items, *userdata = h->userdata;
                pthread_mutex_unlock(&h->lock);

                run_items(h, n, fn, items, userdata);

                pthread_mutex_lock(&h->lock);
                h->done = true;
                pthread_cond_signal(&h->done_cond);
        }
        pthread_mutex_unlock(&h->lock);
        return NULL;
}

int scan_helper_new(ScanHelper **ret) {
        ScanHelper *h = calloc(1, sizeof *h);
        pthread_attr_t attr;
        sigset_t all, saved;
        int r;

        if (!h)
                return -ENOMEM;
        pthread_mutex_init(&h->lock, NULL);
        pthread_cond_init(&h->posted_cond, NULL);
        pthread_cond_init(&h->done_cond, NULL);
        atomic_init(&h->next, 0);

        r = pthread_attr_init(&attr);
        if (r == 0) {
                /* It calls a handful of functions a few frames deep. */
                (void) pthread_attr_setstacksize(&attr, 64 * 1024);
                /* Signals stay with the main loop: the thread inherits this mask. */
                sigfillset(&all);
                pthread_sigmask(SIG_BLOCK, &all, &saved);
                r = pthread_create(&h->thread, &attr, helper_main, h);
                pthread_sigmask(SIG_SETMASK, &saved, NULL);
                pthread_attr_destroy(&attr);
        }
        if (r != 0) {
                pthread_cond_destroy(&h->done_cond);
                pthread_cond_destroy(&h->posted_cond);
                pthread_mutex_destroy(&h->lock);
                free(h);
                return -r;
        }
        *ret = h;
        return 0;
}

void scan_helper_run(ScanHelper *h, size_t n, scan_item_fn fn, void *items, void *userdata) {
        if (!h) {
                for (size_t i = 0; i < n; i++)
                        fn(items, i, userdata);
                return;
        }

        pthread_mutex_lock(&h->lock);
        h->n = n;
        h->fn = fn;
        h->items = items;
        h->userdata = userdata;
        atomic_store_explicit(&h->next, 0, memory_order_relaxed);
        h->posted = true;
        h->taken = h->done = false;
        pthread_cond_signal(&h->posted_cond);
        pthread_mutex_unlock(&h->lock);

        run_items(h, n, fn, items, userdata);

        /* Withdrawn if the helper has not woken up yet (on a VM that can take
         * milliseconds); else it is at its last items, or done. */
        pthread_mutex_lock(&h->lock);
        if (h->taken)
                while (!h->done)
                        pthread_cond_wait(&h->done_cond, &h->lock);
        h->posted = false;
        pthread_mutex_unlock(&h->lock);
}

void scan_helper_free(ScanHelper *h) {
        if (!h)
                return;
        pthread_mutex_lock(&h->lock);
        h->quit = true;
        pthread_cond_signal(&h->posted_cond);
        pthread_mutex_unlock(&h->lock);
        pthread_join(h->thread, NULL);
        pthread_cond_destroy(&h->done_cond);
        pthread_cond_destroy(&h->posted_cond);
        pthread_mutex_destroy(&h->lock);
        free(h);
}
