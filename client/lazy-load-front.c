/* SPDX-License-Identifier: LGPL-2.1-or-later */

/*
 * lazy_symbol() for the static front (front.h): it never loads a library.
 * The front hands every command that would need libsystemd or json-c to
 * freezectl-dynamic before doing anything, so a call here is a bug of that
 * choice (freezectl.c, front_serves()), said as such.
 */

#include <stdio.h>
#include <stdlib.h>

#include "lazy-load.h"

void *lazy_symbol(void **handle, const char *soname, const char *name) {
        fprintf(stderr, "freezectl: internal error: the static freezectl needs %s from %s; "
                        "run freezectl-dynamic with the same arguments\n", name, soname);
        exit(EXIT_FAILURE);
}
