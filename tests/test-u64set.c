/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Unit tests of the set of 64-bit keys (daemon/u64set.c): 6,000 names'
 * hashes, and adds and removes at random over a pool of keys (0 among them)
 * checked against a plain array, so that probe chains wrap around the table
 * and the backward shift of a removal moves keys across the wrap.  And the
 * same for the watch descriptor map (daemon/wdmap.c), on the same table
 * (daemon/u64table.c). */
#include "test-util.h"
#include "u64set.h"
#include "wdmap.h"

static uint64_t rng = 88172645463325252ULL;

static uint64_t next(void) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
}

static void test_basic(void) {
        U64Set *s = NULL;

        CHECK(!u64set_contains(s, 0) && u64set_size(s) == 0);
        CHECK(!u64set_remove(&s, 5) && !s);
        CHECK_R(u64set_add(&s, 5), 1);
        CHECK_R(u64set_add(&s, 5), 0);
        CHECK_R(u64set_add(&s, 0), 1);
        CHECK_R(u64set_add(&s, 0), 0);
        CHECK(u64set_contains(s, 0) && u64set_contains(s, 5) && !u64set_contains(s, 6));
        CHECK(u64set_size(s) == 2);
        CHECK(u64set_remove(&s, 0) && !u64set_contains(s, 0) && s);
        CHECK(!u64set_remove(&s, 0));
        CHECK(u64set_remove(&s, 5) && !s); /* freed once empty */
        s = u64set_free(s);
}

/* Many keys, then all removed: the set grows, stays whole, and ends NULL. */
static void test_many(void) {
        enum { N = 6000 };
        static uint64_t keys[N];
        U64Set *s = NULL;
        size_t bad = 0;

        for (size_t i = 0; i < N; i++) {
                char name[32];

                snprintf(name, sizeof name, "c%zu", i); /* the names of a big node's children */
                keys[i] = string_hash(name);
                CHECK_R(u64set_add(&s, keys[i]), 1);
        }
        CHECK(u64set_size(s) == N);
        for (size_t i = 0; i < N; i++)
                bad += !u64set_contains(s, keys[i]);
        CHECK(bad == 0);
        for (size_t i = 0; i < N; i += 2)
                CHECK(u64set_remove(&s, keys[i]));
        for (size_t i = 0; i < N; i++)
                bad += u64set_contains(s, keys[i]) != (i % 2 == 1);
        CHECK(bad == 0);
        for (size_t i = 1; i < N; i += 2)
                CHECK(u64set_remove(&s, keys[i]));
        CHECK(!s);
}

static void test_random(void) {
        enum { POOL = 97, OPS = 200000 };
        uint64_t pool[POOL];
        bool in[POOL] = {};
        size_t n = 0, bad = 0;
        U64Set *s = NULL;

        /* 0, kept aside, and random keys: in tables of 8 to 256 slots many
         * share a home or a chain. */
        pool[0] = 0;
        for (size_t i = 1; i < POOL; i++)
                pool[i] = next() | 1;
        for (size_t op = 0; op < OPS; op++) {
                size_t k = next() % POOL;
                /* More adds than removes while small, then the other way. */
                bool add = (next() % 100) < (op % 20000 < 10000 ? 70u : 30u);

                if (add) {
                        int r = u64set_add(&s, pool[k]);
                        bad += r != (in[k] ? 0 : 1);
                        n += !in[k];
                        in[k] = true;
                } else {
                        bool r = u64set_remove(&s, pool[k]);
                        bad += r != in[k];
                        n -= in[k];
                        in[k] = false;
                }
                bad += u64set_size(s) != n || (n == 0) != !s;
                if (op % 97 == 0)
                        for (size_t i = 0; i < POOL; i++)
                                bad += u64set_contains(s, pool[i]) != in[i];
        }
        CHECK(bad == 0);
        s = u64set_free(s);
}

static void test_wdmap_basic(void) {
        WdMap *m = wdmap_new();
        const WdEntry *e;
        int a, b;

        CHECK(m);
        CHECK(!wdmap_get(m, 1) && !wdmap_get(m, 0) && !wdmap_get(m, -1));
        CHECK_R(wdmap_put(m, 0, &a, 1), -EINVAL);
        CHECK_R(wdmap_put(m, -3, &a, 1), -EINVAL);
        CHECK_R(wdmap_remove(m, 0), 0);
        CHECK_R(wdmap_put(m, 7, &a, 1), 0);
        CHECK_R(wdmap_put(m, 7, &b, 2), 0); /* replaces */
        CHECK(wdmap_size(m) == 1);
        e = wdmap_get(m, 7);
        CHECK(e && e->wd == 7 && e->ptr == &b && e->kind == 2);
        CHECK_R(wdmap_remove(m, 7), 1);
        CHECK_R(wdmap_remove(m, 7), 0);
        CHECK(!wdmap_get(m, 7) && wdmap_size(m) == 0);
        wdmap_free(m);
}

/* The wds of many groups, handed out consecutively as the kernel does: the map
 * grows from 64 slots, then every other one goes. */
static void test_wdmap_many(void) {
        enum { N = 6000 };
        static int tag[N + 1];
        WdMap *m = wdmap_new();
        size_t bad = 0;

        CHECK(m);
        for (int wd = 1; wd <= N; wd++)
                CHECK_R(wdmap_put(m, wd, &tag[wd], (unsigned) wd % 4), 0);
        CHECK(wdmap_size(m) == N);
        for (int wd = 1; wd <= N; wd++) {
                const WdEntry *e = wdmap_get(m, wd);
                bad += !e || e->ptr != &tag[wd] || e->kind != (unsigned) wd % 4;
        }
        CHECK(bad == 0);
        for (int wd = 1; wd <= N; wd += 2)
                CHECK_R(wdmap_remove(m, wd), 1);
        for (int wd = 1; wd <= N; wd++)
                bad += !wdmap_get(m, wd) != (wd % 2 == 1);
        CHECK(bad == 0 && wdmap_size(m) == N / 2);
        wdmap_free(m);
}

/* Puts (new and replacing) and removes at random over a pool of wds spread
 * wide, checked against a plain array. */
static void test_wdmap_random(void) {
        enum { POOL = 211, OPS = 200000 };
        int pool[POOL];
        void *want[POOL] = {};
        unsigned kind[POOL] = {};
        static char tags[OPS];
        size_t n = 0, bad = 0;
        WdMap *m = wdmap_new();

        CHECK(m);
        for (size_t i = 0; i < POOL; i++)
                pool[i] = (int) (next() % 100000) * POOL + (int) i + 1; /* distinct, > 0 */
        for (size_t op = 0; op < OPS; op++) {
                size_t k = next() % POOL;
                bool put = (next() % 100) < (op % 20000 < 10000 ? 70u : 30u);

                if (put) {
                        bad += wdmap_put(m, pool[k], &tags[op], (unsigned) op) != 0;
                        n += !want[k];
                        want[k] = &tags[op];
                        kind[k] = (unsigned) op;
                } else {
                        bad += wdmap_remove(m, pool[k]) != !!want[k];
                        n -= !!want[k];
                        want[k] = NULL;
                }
                bad += wdmap_size(m) != n;
                if (op % 97 == 0)
                        for (size_t i = 0; i < POOL; i++) {
                                const WdEntry *e = wdmap_get(m, pool[i]);
                                bad += want[i] ? !e || e->ptr != want[i] || e->kind != kind[i] : !!e;
                        }
        }
        CHECK(bad == 0);
        wdmap_free(m);
}

int main(void) {
        test_basic();
        test_many();
        test_random();
        test_wdmap_basic();
        test_wdmap_many();
        test_wdmap_random();
        return test_summary("test-u64set");
}
