/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Libraries freezectl loads on first use rather than at start (json-c-lazy.c,
 * libsystemd-lazy.c): a freeze is mostly process start-up, and on machines
 * where page faults are dear each library mapped and relocated at start is a
 * good part of it. freezectl is not linked against them: the files above
 * define the functions it uses, with the libraries' own names and prototypes
 * (checked against their headers), which dlopen() the library on the first
 * call and forward to it. A function freezectl starts to use needs a line
 * there, or the link fails.
 */

/* The symbol name of the library soname, which *handle caches once loaded.
 * There is no way to report a failure through the libraries' APIs: without
 * them (a broken installation) the command cannot go on, so it exits. */
void *lazy_symbol(void **handle, const char *soname, const char *name);

/* Define getter(name): the symbol name of the library soname (lazy_symbol()). */
#define LAZY_LIBRARY(getter, soname)                                            \
        static void *getter(const char *name) {                                 \
                static void *dl = NULL;                                         \
                return lazy_symbol(&dl, soname, name);                          \
        }

/* Define name(params) to call the library's name(args); getter(name) is the
 * file's lazy_symbol() with its library. */
#define LAZY_FORWARD(getter, ret, name, params, args)                           \
        ret name params {                                                       \
                static typeof(name) *sym = NULL;                                \
                                                                                \
                if (!sym)                                                       \
                        sym = (typeof(name) *) getter(#name);                   \
                return sym args;                                                \
        }

#define LAZY_FORWARD_VOID(getter, name, params, args)                           \
        void name params {                                                      \
                static typeof(name) *sym = NULL;                                \
                                                                                \
                if (!sym)                                                       \
                        sym = (typeof(name) *) getter(#name);                   \
                sym args;                                                       \
        }
