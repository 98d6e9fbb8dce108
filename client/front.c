/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config-build.h"
#include "front.h"

#define DYNAMIC_NAME "freezectl-dynamic"

static char **saved_argv;

void front_save_argv(int argc, char *argv[]) {
        /* Only the array: getopt() reorders the pointers, never the strings. */
        saved_argv = calloc((size_t) argc + 1, sizeof *saved_argv);
        if (saved_argv)
                memcpy(saved_argv, argv, (size_t) argc * sizeof *argv);
}

/* dir(/proc/self/exe)/freezectl-dynamic, in buf; false if it does not fit. */
static bool sibling_path(char *buf, size_t size) {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        char *slash;

        if (n <= 0)
                return false;
        self[n] = '\0';
        slash = strrchr(self, '/');
        if (!slash)
                return false;
        slash[1] = '\0';
        return (size_t) snprintf(buf, size, "%s" DYNAMIC_NAME, self) < size;
}

void front_exec_dynamic(const char *why) {
        char sibling[PATH_MAX];
        int err = ENOENT;

        if (!saved_argv) {
                fprintf(stderr, "freezectl: out of memory\n");
                return;
        }
        if (sibling_path(sibling, sizeof sibling)) {
                execv(sibling, saved_argv);
                err = errno;
        }
        if (err == ENOENT) {
                execv(FREEZECTL_DYNAMIC_PATH, saved_argv);
                err = errno;
        }
        fprintf(stderr, "freezectl: %s is for %s to do, which cannot be run: %s\n", why, FREEZECTL_DYNAMIC_PATH,
                strerror(err));
}
