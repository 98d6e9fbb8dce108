/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A set of 64-bit keys (hashes of names: see string_hash()), for sets that
 * may grow to thousands but are usually absent: NULL is the empty set, made by
 * the first u64set_add() and freed by the u64set_remove() of the last key.
 * Open addressing (u64table.h, as wdmap.c), where a list searched linearly
 * cost 10 ms per lookup at 6,000 keys. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct U64Set U64Set;

/* 1 if key was added, 0 if it was there already, -ENOMEM (*s unchanged). */
int u64set_add(U64Set **s, uint64_t key);
bool u64set_contains(const U64Set *s, uint64_t key);
/* Whether key was there; *s is freed and NULL once empty. */
bool u64set_remove(U64Set **s, uint64_t key);
size_t u64set_size(const U64Set *s);
U64Set *u64set_free(U64Set *s);
