/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "lazy-load.h"

_Noreturn static void library_missing(const char *soname, const char *what, const char *error) {
        fprintf(stderr, "freezectl: cannot load %s from %s: %s\n", what, soname, error ?: "unknown error");
        exit(EXIT_FAILURE);
}

void *lazy_symbol(void **handle, const char *soname, const char *name) {
        void *p;

        if (!*handle) {
                *handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
                if (!*handle)
                        library_missing(soname, "the library", dlerror());
        }

        p = dlsym(*handle, name);
        if (!p)
                library_missing(soname, name, dlerror());
        return p;
}
