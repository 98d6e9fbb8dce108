/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "batch-json.h"
#include "bus-wire.h"
#include "cgroup-util.h"
#include "client-util.h"
#include "config-build.h"
#include "duration.h"
#include "freezer.h"
#include "front.h"
#include "group-table.h"
#include "psi.h" /* the kernel's trigger limits */

/* 1 in the static front of freezectl (front.h), 0 in the whole program. */
#ifndef FREEZECTL_FRONT
#define FREEZECTL_FRONT 0
#endif

#define PROGRAM "freezectl"

#define EXIT_USAGE 2
/* thaw: every flag asked for is cleared, but a PATH stays frozen by what is
 * above it (an ancestor's flag, the root's own, a group above the root).
 * Neither success (the group does not run) nor a failure (nothing is left to
 * do at PATH: the freeze is another's), for a script to tell apart. */
#define EXIT_STILL_FROZEN 3

typedef enum bus_kind {
        BUS_DEFAULT,    /* as root the private socket if it answers, else the system bus */
        BUS_SYSTEM,
        BUS_USER,
        BUS_ADDRESS,
        BUS_PRIVATE,    /* --socket= */
} bus_kind;

static bus_kind arg_bus = BUS_DEFAULT;
/* Connected to freezerd's private socket (--socket=, or root's default), not a bus. */
static bool connected_private = false;
static const char *arg_address = NULL;
static const char *arg_socket = NULL;
static bool arg_json = false;
static uint64_t arg_timeout_usec = 0;
static bool arg_timeout_set = false;
static bool arg_no_wait = false;
static bool arg_rollback = false;
static bool arg_skip_missing = false;
static bool arg_initial = false;
static bool arg_recursive = false;
static freezer_order arg_order = FREEZER_ORDER_AUTO;
static bool arg_order_set = false;
static char **arg_except = NULL;
/* Each --except= path normalized as freezerd names the group ("/pods/a" for
 * "pods/a/"), once for every use; NULL where it does not normalize (left to
 * freezerd, which says what is wrong with it) or on a failed allocation. */
static char **arg_except_norm = NULL;
static size_t n_arg_except = 0;

/* A --trigger of watch: RESOURCE:KIND:THRESHOLD:WINDOW. */
typedef struct trigger_spec {
        freezer_resource resource;
        bool full;
        uint64_t threshold_usec;
        uint64_t window_usec;
        uint32_t id;    /* once added */
        bool active;    /* added and not ended */
        bool pending;   /* to be added: at the start, and again once a freezerd
                         * is back after the exit of the one that held it */
} trigger_spec;

static trigger_spec *arg_triggers = NULL;
static size_t n_arg_triggers = 0;

static void help_to(FILE *f) {
        fprintf(f, "%1$s [OPTIONS...] COMMAND [ARGS...]\n"
               "\n"
               "Freeze, thaw and inspect cgroups, and follow their state and pressure, through\n"
               "freezerd (org.freezerd.Freezer1).\n"
               "\n"
               "Commands:\n"
               "  freeze PATH...       Freeze each group in turn; wait until the kernel reports\n"
               "                       it frozen\n"
               "  freeze PATH --except=EXCLUDED...\n"
               "                       Freeze everything below PATH except the EXCLUDED\n"
               "                       subtrees, by freezing the fewest groups that cover the\n"
               "                       rest (at each level, the siblings of an excluded\n"
               "                       branch), as one batch; print the groups it froze,\n"
               "                       sorted\n"
               "  thaw PATH...         Thaw each group in turn; wait until the kernel reports\n"
               "                       it running. If an ancestor still freezes it, the\n"
               "                       group's own freeze flag is cleared nevertheless and\n"
               "                       thaw exits 3 (see Exit status). Notes on standard\n"
               "                       error how many groups below it stay frozen by their\n"
               "                       own flags (thaw --recursive clears them)\n"
               "  batch FILE           Apply the freeze and thaw requests in the JSON file FILE\n"
               "                       (\"-\": standard input) as one batch; print how many\n"
               "                       freeze flags were written and how many requests were\n"
               "                       skipped because the flag was set that way already\n"
               "                       (when a path is given more than once, its last request\n"
               "                       counts, and the others are neither)\n"
               "  status [PATH]        Show the properties of one group (default: \"/\");\n"
               "                       \"Frozen in all\" is the time it spent frozen or\n"
               "                       freezing since it was made, summed over every freeze\n"
               "                       (the kernel's frozen_usec)\n"
               "  list                 List the tracked groups with their state\n"
               "  tree [PATH]          Show PATH (default: \"/\") and the tracked groups below it\n"
               "                       as a tree, each with its state; the untracked groups on\n"
               "                       the way to them (\"/\", or an ancestor of a tracked\n"
               "                       subtree) by their name alone\n"
               "  pressure [PATH]      Show the pressure stall information (PSI) of the group\n"
               "                       at PATH, or without PATH of the whole system: for cpu,\n"
               "                       memory and io (and irq, for the system, where the\n"
               "                       kernel accounts it) how much of the time tasks were\n"
               "                       stalled waiting for it, and the total stall time\n"
               "  watch [PATH]         Follow the groups at and below PATH (default: all\n"
               "                       groups) and print one line per event as it happens:\n"
               "                       state changes, groups added and removed, and the\n"
               "                       events of the pressure triggers given with --trigger;\n"
               "                       until SIGINT (Ctrl+C) or SIGTERM\n"
               "  track PATH...        Make freezerd follow and publish the subtree at each\n"
               "                       PATH, also after it restarts (kept in its state\n"
               "                       directory)\n"
               "  untrack PATH...      Stop following a subtree tracked by track, or by another\n"
               "                       command given a PATH outside the tracked subtrees, or\n"
               "                       named in the configuration (which freezerd follows again\n"
               "                       at its next SIGHUP or start: take it out of the file\n"
               "                       to drop it for good); flags are left as they are\n"
               "  help [COMMAND]       Show this help, or its entries about COMMAND and the\n"
               "                       options COMMAND takes (as COMMAND --help does)\n"
               "\n"
               "Options:\n"
               "  -h --help            Show this help (COMMAND's part if a COMMAND is given)\n"
               "                       and exit, as soon as it is read: the options after it\n"
               "                       are not looked at\n"
               "     --version         Show the version and exit\n"
               "     --system          Talk to freezerd on the system bus. The default is the\n"
               "                       system bus too, but for root, whose commands other\n"
               "                       than watch go over freezerd's private socket\n"
               "                       (" FREEZER_PRIVATE_SOCKET ") while freezerd listens there\n"
               "                       and lets it in (not at its limit of connections)\n"
               "     --user            Talk to freezerd on the user's session bus\n"
               "     --address=ADDR    Talk to freezerd on the D-Bus bus at ADDR, e.g.\n"
               "                       unix:path=/run/dbus/system_bus_socket\n"
               "     --socket=PATH     Talk to freezerd directly over its private socket at\n"
               "                       PATH (for root, and for the user freezerd runs as; a\n"
               "                       freezerd started with --runtime-dir=DIR listens on\n"
               "                       DIR/private). It skips the bus daemon. watch works\n"
               "                       there too (one hop less per change, --trigger\n"
               "                       included) but ends with freezerd\n"
               "     --json            Print JSON on standard output instead of text\n"
               "     --timeout=DURATION\n"
               "                       freeze, thaw, batch: how long the daemon waits for the\n"
               "                       kernel (default, and 0: the daemon's DefaultTimeoutUSec;\n"
               "                       not with --no-wait)\n"
               "     --no-wait         freeze, thaw, batch: return as soon as cgroup.freeze is\n"
               "                       written, without waiting for the kernel (a freeze of\n"
               "                       freezectl's own group is then not refused)\n"
               "     --rollback        freeze, thaw, batch: on timeout write the previous\n"
               "                       cgroup.freeze value back before failing. It undoes a\n"
               "                       timeout only: a thaw that fails with FrozenByParent (an\n"
               "                       ancestor still freezes the group) leaves the group's\n"
               "                       own flag cleared, as that took effect. Batches (batch,\n"
               "                       --except, --recursive) become all-or-nothing: on\n"
               "                       timeout or on a failed write every flag the batch\n"
               "                       changed is restored, but one a later call asked for\n"
               "                       as it was set (the error says which). With --no-wait\n"
               "                       for batches only (a failed write)\n"
               "     --recursive       freeze, thaw, batch: apply each request to every group\n"
               "                       of the subtree below its path, the path's group\n"
               "                       included, as one batch (freezes top-down, thaws\n"
               "                       bottom-up); \"thaw --recursive /user.slice\" clears every\n"
               "                       freeze flag in /user.slice, also those of groups that\n"
               "                       freezerd does not follow (for their names, their depth,\n"
               "                       the inotify watch limit)\n"
               "     --except=PATH     freeze: leave the subtree at PATH, which must lie below\n"
               "                       the PATH to freeze, running; may be given more than\n"
               "                       once. It is left as it is: a group in it frozen by its\n"
               "                       own flag stays frozen, and a note names it\n"
               "     --order=ORDER     batch: the order of the writes: \"auto\" (default: all\n"
               "                       freezes top-down, then all thaws bottom-up, so that no\n"
               "                       group changes its state twice), \"top-down\" (shallowest\n"
               "                       first) or \"bottom-up\" (deepest first)\n"
               "     --skip-missing    batch: leave out the requests whose group does not exist\n"
               "                       (removed since the file was made, or removed while the\n"
               "                       batch goes on), count them as skipped, and apply the\n"
               "                       others, instead of failing with nothing written. A\n"
               "                       malformed path, \"/\" or any other error still fails it.\n"
               "                       Which requests were left out is not told (freezerd's\n"
               "                       reply holds the counts only). A freezerd older than\n"
               "                       the option refuses it (Unknown flags 0x8)\n"
               "     --trigger=RESOURCE:KIND:THRESHOLD:WINDOW\n"
               "                       watch: add a pressure trigger for the session on the\n"
               "                       group at PATH (without PATH: system-wide), which fires\n"
               "                       when the KIND (\"some\" or \"full\") stall time of\n"
               "                       RESOURCE (\"cpu\", \"memory\", \"io\"; \"irq\" system-wide\n"
               "                       and full only) grows by THRESHOLD within WINDOW, e.g.\n"
               "                       memory:some:150ms:2s; may be given more than once.\n"
               "                       watch removes its triggers when it exits\n"
               "     --initial         watch: after the watching line, print a \"listed\" line\n"
               "                       for each group at and below PATH, sorted by path, as\n"
               "                       freezerd lists them once watch follows its changes:\n"
               "                       what changes after the list comes after these lines,\n"
               "                       so none is lost between a list and a watch\n"
               "\n"
               "PATH names a cgroup relative to freezerd's cgroup root: \"/\", \"/pods/a\".\n"
               "Every command given a PATH outside the tracked subtrees makes freezerd track\n"
               "the group's subtree: freeze (its --except= paths too), thaw and batch (the\n"
               "paths of its requests) for good, as track does (untrack ends that); status,\n"
               "tree, pressure and watch, which only look, only while they run; list, and\n"
               "status, tree and pressure of \"/\" or without PATH, track nothing. With a\n"
               "freezerd that lacks LookupGroup (an older one), status, tree, pressure and\n"
               "watch track it for good too, and say so on standard error:\n"
               "  %1$s: note: freezerd now tracks /x and the groups below it, also\n"
               "  after it restarts (...): %1$s untrack /x ends that\n"
               "Options may be given before or after the command; \"--\" ends the options,\n"
               "so that paths starting with \"-\" can be given.\n"
               "DURATION is a number, optionally with a fraction, and a unit: us (or usec), ms\n"
               "(msec), s (sec, second, seconds), min (m, minute, minutes), h (hr, hour,\n"
               "hours); or several such, summed, as in systemd.time(7) and as status prints\n"
               "them: \"250ms\", \"1.5s\", \"2min\", \"2min 3s\", \"2min3s\", \"1h 30min\". A lone number\n"
               "without a unit means seconds (\"5\" is \"5s\"); one after others (\"2min 3\") is\n"
               "refused. Days and longer, and \"infinity\", are not taken.\n"
               "\n"
               "freeze and thaw handle the paths in the order given and stop at the first\n"
               "failure: the paths after it are left alone; but thaw goes on after a\n"
               "FrozenByParent (the path's own flag is 0, an ancestor still freezes it: exit\n"
               "3), and exits 1 when any path failed otherwise. They print nothing on success\n"
               "(unless --json or --except is given). Errors go to standard error as\n"
               "  %1$s: cannot freeze /pods/a: Timeout: <message from freezerd>\n"
               "(a PATH that is empty or holds a name that starts or ends with white space in\n"
               "double quotes there, with \\\" for a \" in it; freezerd's message puts such a\n"
               "path in double quotes too; a PATH longer than 256 bytes as freezerd's message\n"
               "cuts it: its first 96 bytes, \"...\", its last 160 and \" (N bytes)\").\n"
               "The message is freezerd's, but for a Timeout's last sentence without --rollback,\n"
               "which is freezectl's: \"Without --rollback the flags stay as asked, and the\n"
               "kernel goes on with them\" (for --except and --recursive, which set flags of\n"
               "groups not named, \"Without --rollback the flags it wrote stay as asked, and the\n"
               "kernel goes on with them: PATH...\"), and a Cancelled's or a batch's\n"
               "NoSuchGroup's \"Without --rollback the flags it wrote stay as asked: PATH...\"\n"
               "(freezerd names its bus flag, ROLLBACK_ON_TIMEOUT, there), with --rollback a\n"
               "Timeout's \"--rollback had nothing to restore: ... PATH...\" of a call that wrote\n"
               "no flag, and untrack's NotTracked, which names freezectl's untrack and track for\n"
               "freezerd's Untrack() and Track() (--json keeps freezerd's message as it is). Up\n"
               "to four PATHs, then \"and N more\"; a PATH there that holds a \" or \", \", \" and \",\n"
               "\": \" or \". \", or ends in \",\", \" and\", \":\" or \".\", in double quotes too, as\n"
               "freezerd names it; and so is a path in freezectl's words where it is one of a\n"
               "list (the groups of freeze --except's notes, and their excluded one; the\n"
               "EXCLUDED of \"except EXCLUDED, ...\"; the A and B of a note's \"between A and B\n"
               "that freezerd does not track\").\n"
               "thaw PATH clears PATH's own flag only: groups below it that their own flags\n"
               "freeze (as freeze --except leaves them) stay frozen; thaw --recursive PATH\n"
               "clears those too. Once the kernel reports PATH running, thaw (unless\n"
               "--no-wait) notes on standard error how many groups below PATH stay frozen\n"
               "so, if any (its FrozenDescendants), and still exits 0.\n"
               "A freeze (freeze, --except, batch) that would freeze the group freezectl\n"
               "itself runs in (a terminal's) is refused, nothing written, exit 1: frozen\n"
               "with it, freezectl would never read the reply. Run it from a group the\n"
               "freeze leaves running (one given with --except=), or give --no-wait to\n"
               "freeze it all the same: freezectl then freezes too, and exits once that\n"
               "group is thawed from elsewhere. (For --recursive /, any group below\n"
               "freezerd's root counts, followed by freezerd or not.)\n"
               "With --recursive each PATH is one batch over its subtree: thaw then waits until\n"
               "every group in it runs or stays frozen by an ancestor of PATH, and does not\n"
               "fail with FrozenByParent; where something above PATH still freezes it, it exits\n"
               "3, as a plain thaw does, and notes on standard error what (with --no-wait too,\n"
               "from the flags above PATH): an ancestor, the own flag of freezerd's cgroup root\n"
               "(\"/\"), or a group above that root, whose path it names. It reads the ancestors'\n"
               "flags from the list of tracked groups, and tracks none to look: of a group\n"
               "freezerd does not track, it says \"a group between A and B that freezerd does\n"
               "not track\" (A and B tracked), which may freeze PATH, or does when B is not\n"
               "frozen.\n"
               "As a --recursive PATH, \"/\" stands for every group freezerd tracks below its\n"
               "cgroup root (whose own flag freezerd does not write); groups outside the\n"
               "tracked subtrees are left alone.\n"
               "With --except, freeze takes exactly one PATH. Processes directly in PATH, or\n"
               "in a group between PATH and an excluded group, keep running: the kernel\n"
               "cannot freeze a group without its descendants. The groups printed are the\n"
               "ones whose flag is now set (also those that had it set already); feed them\n"
               "to batch to thaw them again (see the examples). A timeout without --rollback\n"
               "prints none and leaves the flags set: its error line names the flags it set\n"
               "(not those set before the call, which a success prints too; tree PATH shows\n"
               "them all). A group it would freeze on its own that freezerd does not follow\n"
               "fails it, nothing frozen: for its name (not UTF-8, a C0 control character or\n"
               "DEL) with NotSupported, because freezerd could not watch it (the inotify\n"
               "watch limit) with LimitsExceeded: freeze PATH whole.\n"
               "\n"
               "Batch files hold a JSON array of at most 65536 objects (and at most 64 MiB),\n"
               "each with exactly the keys \"path\" (a string) and \"freeze\" (true to freeze,\n"
               "false to thaw):\n"
               "  [{\"path\": \"/pods/a\", \"freeze\": true},\n"
               "   {\"path\": \"/pods/b\", \"freeze\": false}]\n"
               "The file is checked before freezerd is contacted: anything else (other keys,\n"
               "repeated keys, other types, comments, trailing commas, an empty array, a\n"
               "\\uXXXX surrogate outside a pair) is refused with a message naming the\n"
               "element by its index, counted from 0, and its line, and exit status 2.\n"
               "freezerd then checks every path before it writes anything: one malformed or\n"
               "missing path and nothing changes; its message names the request by the same\n"
               "index (with --skip-missing a missing one is left out instead, as saved lists\n"
               "of groups to thaw need: \"freeze --except\"'s output, thawed after some of\n"
               "its groups were removed). When a path occurs more than once, the last\n"
               "request wins. batch waits until every requested group reaches the state its\n"
               "flags imply; without --rollback a timeout leaves the flags as requested, and\n"
               "the message names the groups that did not finish.\n"
               "The bus may refuse very large batches: dbus-daemon's default limit is 32 MiB\n"
               "per message, about 65536 paths of 500 bytes.\n"
               "\n"
               "pressure prints one row per resource and kind: AVG10, AVG60 and AVG300 are the\n"
               "percentage of wall time, over the last 10 s, 60 s and 300 s, in which at\n"
               "least one task (\"some\") or all non-idle tasks at once (\"full\") were\n"
               "stalled waiting for the resource; TOTAL is the stall time summed up since\n"
               "the group was created (for the system: since boot). A group's pressure\n"
               "includes the stalls of the tasks in the groups below it. freezerd reads the\n"
               "kernel's files at the time of the call. A resource whose pressure the kernel\n"
               "hides (the group's cgroup.pressure is 0) or disables (psi=0) is shown as\n"
               "  cpu      not available: <the reason freezerd gives>\n"
               "IRQ pressure exists for the system only, and only where the kernel accounts\n"
               "it (CONFIG_IRQ_TIME_ACCOUNTING); otherwise its row is left out. So is the\n"
               "\"full\" row of cpu where the kernel has none (before Linux 5.13).\n"
               "\n"
               "watch first prints a \"watching\" line, once it follows the groups and its\n"
               "triggers are armed; then one line per event, each starting with the local\n"
               "time:\n"
               "  TIME watching PATH; trigger ID: RESOURCE KIND THRESHOLD per WINDOW, ...\n"
               "  TIME listed   PATH STATE        (with --initial: a group there at the start)\n"
               "  TIME state    PATH STATE        (FreezerState changed)\n"
               "  TIME added    PATH STATE        (a group appeared: created or tracked)\n"
               "  TIME removed  PATH              (a group went: removed or untracked)\n"
               "  TIME pressure PATH RESOURCE KIND (trigger ID): avg10 A%% avg60 B%% avg300 C%%\n"
               "                total T           (A, B, C, T: as pressure prints AVG10,\n"
               "                                   AVG60, AVG300 and TOTAL)\n"
               "  TIME trigger-removed PATH RESOURCE KIND (trigger ID): REASON\n"
               "  TIME freezerd exited            (freezerd left the bus; watch waits)\n"
               "  TIME freezerd started           (a freezerd took the bus name; then the\n"
               "                                   watching line again if watch added\n"
               "                                   triggers again, and a state, added or\n"
               "                                   removed line for each group that changed\n"
               "                                   meanwhile)\n"
               "Without a freezerd on the bus, watch says so on standard error and waits\n"
               "for one; then it starts as it would have with one there: it looks PATH up,\n"
               "adds its triggers and prints the watching line.\n"
               "The watching line names PATH, or \"all groups\" without one; pressure lines name\n"
               "\"system\" for system-wide triggers. The kernel fires a trigger at most once per\n"
               "WINDOW. WINDOW must lie between 500ms and 10s, and be a whole multiple of 2s\n"
               "unless freezerd has CAP_SYS_RESOURCE (the shipped unit keeps it; a freezerd in\n"
               "a container or started without it has not) and watch runs as root; THRESHOLD\n"
               "must not be 0 nor above WINDOW (a number without a unit is seconds: 100 is\n"
               "100s, not 100ms). A trigger ends by itself when its group is removed (REASON\n"
               "group-removed) or untracked (untracked), when the group's pressure is hidden\n"
               "(pressure-hidden), on a kernel error (error), or when freezerd exits\n"
               "(daemon-exited); watch goes on. The triggers freezerd's exit ended are added\n"
               "again once a freezerd is back, and the watching line printed again names them\n"
               "with their new IDs. On SIGINT or SIGTERM watch removes its triggers and exits 0\n"
               "(a freezerd that does not answer the first removal within the method-call\n"
               "timeout, 25 s, is asked no more, and one more SIGINT or SIGTERM meanwhile exits\n"
               "0 at once: the triggers end with the connection all the same); before the\n"
               "watching line, it exits 0 at once, and so it does while, a freezerd back, it\n"
               "adds its triggers again and lists the groups to catch up (calls that a freezerd\n"
               "stuck or stopped as it starts does not answer), without the lines of that\n"
               "catch-up (\"freezerd started\" on).\n"
               "If freezerd refuses a trigger, nothing is watched and watch exits 1; so it\n"
               "does if a new freezerd refuses one that watch adds again, and when the\n"
               "connection is lost (over --socket=, when freezerd exits), after a\n"
               "trigger-removed line for each of its triggers (disconnected). A freezerd\n"
               "that starts under watch and refuses to report state changes (an older one,\n"
               "or a bus policy, refusing SubscribeGroups) ends it too, with exit status 1,\n"
               "its triggers removed: \"freezerd refused to report state changes after it\n"
               "restarted\" (or started), as at watch's start.\n"
               "\n"
               "JSON output (--json):\n"
               "  freeze, thaw, track, untrack\n"
               "                   an array with one {\"path\", \"result\"} object per path\n"
               "                   handled; \"result\" is \"done\", or \"failed\" with \"error\" and\n"
               "                   \"message\". \"path\" is PATH normalized as list prints it\n"
               "                   (\"/pods/a\" for \"pods/a/\"), or as given if freezerd refused\n"
               "                   it as malformed (a byte that is not UTF-8 as U+FFFD). A thaw\n"
               "                   whose PATH stays frozen (exit 3), --recursive or not (a\n"
               "                   plain thaw's FrozenByParent cleared PATH's flag all the\n"
               "                   same), is \"done\" and adds \"frozen_by\": the ancestor that\n"
               "                   freezes it (\"/\": the cgroup root's own flag), \"above-root\"\n"
               "                   for a group above freezerd's cgroup root, or \"untracked\" for\n"
               "                   a group freezerd does not track; and \"untracked_between\":\n"
               "                   [A, B] where groups that freezerd does not track lie between\n"
               "                   PATH and what \"frozen_by\" names (A and B the tracked groups\n"
               "                   around them, B null if none is above them), one of which may\n"
               "                   be what freezes it, nearer; null otherwise. A plain thaw\n"
               "                   (not --recursive, not --no-wait) adds \"frozen_below\": N\n"
               "                   where N > 0 groups below PATH stay frozen by their own flags\n"
               "                   (or those of groups between)\n"
               "  freeze --except  an array of the paths of the groups frozen, sorted\n"
               "  batch            {\"writes\": N, \"skipped\": M} (M counts the requests left out\n"
               "                   by --skip-missing too)\n"
               "  status           {\"path\", \"id\", \"state\", \"frozen_by\", \"untracked_between\",\n"
               "                    \"freeze\", \"frozen\", \"populated\", \"descendants\",\n"
               "                    \"frozen_descendants\", \"frozen_usec\"}\n"
               "  list             an array of {\"path\", \"object\", \"state\", \"id\", \"frozen_by\",\n"
               "                    \"untracked_between\"},\n"
               "                   sorted by path; \"id\" is the group's Id (the kernel's id of\n"
               "                   its cgroup; null in list for a group made or removed between\n"
               "                   its two calls to freezerd). \"frozen_by\", for a group frozen\n"
               "                   (or freezing) by a parent, names what freezes it as thaw\n"
               "                   --recursive does (\"/\", a path, \"above-root\" or \"untracked\";\n"
               "                   null otherwise; no group is tracked to look), and\n"
               "                   \"untracked_between\" as there. Text status prints them as\n"
               "                   \"Id:\" (\"unknown\" from a freezerd before 0.5) and \"Frozen\n"
               "                   by:\", which ends in \"(or a group between A and B that\n"
               "                   freezerd does not track)\" where one may freeze it\n"
               "  tree             {\"path\", \"state\", \"children\": [...]}, nested; \"state\"\n"
               "                   is null for groups that are not tracked\n"
               "  pressure         {\"path\" (null for the system), \"cpu\": R, \"memory\": R,\n"
               "                    \"io\": R[, \"irq\": R]}; R is {\"some\": L, \"full\": L} (irq:\n"
               "                   {\"full\": L}; cpu: no \"full\" where the kernel has none,\n"
               "                   before Linux 5.13) with L = {\"avg10\", \"avg60\", \"avg300\",\n"
               "                   \"total_usec\"}, or {\"error\", \"message\"} where not available\n"
               "  watch            one object per line, {\"time\", \"event\", ...}: \"time\" in UTC\n"
               "                   (RFC 3339, with microseconds), and by \"event\":\n"
               "                     \"watching\"  \"path\" (null: all groups), \"triggers\":\n"
               "                                 [{\"id\", \"resource\", \"kind\",\n"
               "                                   \"threshold_usec\", \"window_usec\"}]\n"
               "                     \"state\"     \"path\", \"state\", \"frozen\"\n"
               "                     \"listed\"    \"path\", \"state\", \"frozen\" (--initial)\n"
               "                     \"added\"     \"path\", \"state\", \"frozen\" (null if the\n"
               "                                 state is unknown)\n"
               "                     \"removed\"   \"path\"\n"
               "                     \"pressure\"  \"path\" (null: system-wide), \"id\",\n"
               "                                 \"resource\", \"kind\", \"avg10\", \"avg60\",\n"
               "                                 \"avg300\", \"total_usec\"\n"
               "                     \"trigger-removed\"\n"
               "                                 \"path\", \"id\", \"resource\", \"kind\", \"reason\"\n"
               "                     \"freezerd\"  \"status\": \"exited\" or \"started\"\n"
               "freeze --except and batch print nothing on standard output when they fail, nor\n"
               "does freeze when it refuses to freeze freezectl's own group; no command prints\n"
               "anything there when it cannot connect (no bus there, no freezerd at the\n"
               "--socket= path, or the connection refused: see the error on standard error), so\n"
               "that freeze and thaw print no \"failed\" object for a path they never sent. On a\n"
               "bus where freezerd is not running, the bus answers the call: freeze, thaw,\n"
               "track and untrack print a \"failed\" object for the first path, with the bus'\n"
               "error (ServiceUnknown).\n"
               "\n"
               "Exit status:\n"
               "  0  success\n"
               "  1  failure: freezerd refused or failed a request, or could not be reached,\n"
               "     or a batch file could not be read, or a freeze would freeze freezectl\n"
               "     itself (nothing written)\n"
               "  2  usage error, or a malformed batch file\n"
               "  3  thaw (also --recursive): every flag asked for is cleared, but a PATH stays\n"
               "     frozen by what is above it (an ancestor's flag, the own flag of freezerd's\n"
               "     cgroup root, a group above that root), which the thaw of PATH does not\n"
               "     clear; 1 instead where another PATH failed. 0 means every PATH runs\n"
               "     (groups below it may stay frozen by their own flags)\n"
               "watch exits 0 on SIGINT and SIGTERM, 1 when its connection is lost, its output\n"
               "cannot be written (a reader gone, with SIGPIPE ignored; a full disk) or a\n"
               "freezerd that started refuses to report state changes.\n"
               "SIGINT or SIGTERM while freeze, thaw or batch waits ends freezectl, not the\n"
               "call: freezerd goes on with it (with --rollback it still restores the flags\n"
               "if the kernel does not confirm in time), if it was already working on it.\n"
               "On the bus, a call freezerd reads only after freezectl left (freezerd\n"
               "stopped, or busy) is refused; on the private socket it is carried out\n"
               "then. freezectl says so in one line on standard error and dies of the\n"
               "signal. It says the same, and exits 1, when no reply comes in time: within\n"
               "the --timeout and 5 s, or the bus' own limit; \"status\" tells what was done.\n"
               "\n"
               "Examples:\n"
               "  %1$s freeze /pods/a /pods/b --timeout=5s\n"
               "  %1$s thaw --no-wait /pods/a\n"
               "  %1$s thaw --recursive /user.slice\n"
               "  %1$s freeze /pods --except=/pods/db --except=/pods/web/frontend\n"
               "  %1$s batch requests.json --order=top-down --rollback --timeout=10s\n"
               "  echo '[{\"path\": \"/pods/a\", \"freeze\": false}]' | %1$s batch -\n"
               "  %1$s --json freeze /pods --except=/pods/db >frozen.json\n"
               "  jq 'map({path: ., freeze: false})' frozen.json | %1$s batch -\n"
               "  %1$s status /pods/a\n"
               "  %1$s --json list\n"
               "  %1$s tree /pods\n"
               "  %1$s pressure\n"
               "  %1$s --json pressure /pods/a\n"
               "  %1$s watch /pods --trigger=memory:some:150ms:2s --trigger=cpu:full:1s:10s\n"
               "  %1$s watch --json --trigger=irq:full:100ms:2s\n"
               "  %1$s freeze -- -odd-name\n"
               "\n"
               "Files:\n"
               "  " FREEZER_PRIVATE_SOCKET "\n"
               "                       the system freezerd's private socket (root only; a\n"
               "                       freezerd run by a user listens in its --runtime-dir)\n"
               "%2$s"
               "\n"
               "See also: freezerd(8), busctl(1); the API is in org.freezerd.Freezer1.xml.\n",
               PROGRAM,
               FREEZECTL_FRONT ? "  " FREEZECTL_DYNAMIC_PATH "\n"
                                 "                       freezectl linked dynamically: this freezectl is\n"
                                 "                       static and runs it for every command but freeze and\n"
                                 "                       thaw without --json, --except or --recursive (which\n"
                                 "                       it does itself); a freezectl-dynamic in the\n"
                                 "                       directory of this freezectl comes first\n"
                               : "");
}

static void help(void) {
        help_to(stdout);
}


/* What becomes of the last call that waits once freezectl gives up on it
 * (interrupted, or no reply in time: vlog_failure()), "freezerd may or may
 * not carry out the freeze of /pods: ...". "" before any. */
static char goes_on[1400];
/* The words of a call that waits ("the freeze of /pods except /pods/a, ..."):
 * room for two paths as path_q() names them (path_cut(), CG_QUOTE_MAX bytes
 * and " (N bytes)", in quotes), so that neither is cut off. */
#define CALL_WHAT_MAX (2 * (CG_QUOTE_MAX + 40) + 64)
/* The call of goes_on alone ("the freeze of /pods"). */
static char call_what[CALL_WHAT_MAX];

/* After a connection lost during a call: what became of it.  With
 * ROLLBACK_ON_TIMEOUT freezerd takes the call's flags back as it stops, or
 * from its journal when it starts again after a crash. */
static const char *left_during_call(void) {
        static char buf[sizeof call_what + 200];

        if (!call_what[0])
                return "";
        (void) snprintf(buf, sizeof buf, "; freezerd stopped or crashed during %s: %s", call_what,
                        arg_rollback ? "with --rollback, the flags it changed are restored (as it stops, or when it "
                                       "starts again)"
                                     : "see freezectl status for the flags it left");
        return buf;
}

/* The command name of the process serving the unix socket at path (who
 * listens there: a bus daemon given to --socket=, say); NULL if nobody or
 * unknown. */
static const char *socket_peer_comm(const char *path, char *buf, size_t size) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct ucred cred;
        socklen_t len = sizeof cred;
        char proc[64];
        int fd, r;
        ssize_t n;

        if (!path || strlen(path) >= sizeof sa.sun_path)
                return NULL;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return NULL;
        r = connect(fd, (struct sockaddr *) &sa, sizeof sa);
        if (r >= 0)
                r = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
        close(fd);
        if (r < 0 || cred.pid <= 0)
                return NULL;
        (void) snprintf(proc, sizeof proc, "/proc/%d/comm", (int) cred.pid);
        fd = open(proc, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        n = read(fd, buf, size - 1);
        close(fd);
        if (n <= 0)
                return NULL;
        buf[n] = 0;
        buf[strcspn(buf, "\n")] = 0;
        return buf;
}

/* The PATH the failing call was given, for the hint of a NoSuchGroup that
 * a file system path caused (vlog_failure()); NULL if none.  For a batch,
 * its requests instead (freezerd names the failing one by its index). */
static const char *call_path;
static const freezer_request *call_requests;
static size_t n_call_requests;

/* Whether path is dir or below it. */
static bool path_under(const char *path, const char *dir) {
        size_t n = strlen(dir);

        while (n > 0 && dir[n - 1] == '/')
                n--;
        return n > 0 && strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == 0);
}

/* The mount points of cgroup2 in /proc/self/mountinfo, each ending with a
 * NUL, and then /sys/fs/cgroup, where it usually is (freezectl may run where
 * freezerd's mount is not), and an empty one; NULL on a failed allocation. */
static char *cgroup_mounts(void) {
        char *list = NULL, *l;
        size_t n = 0;

        if (cg_find_cgroup2_mounts(&list, &n) < 0) {
                list = NULL;
                n = 0;
        }
        l = realloc(list, n + sizeof "/sys/fs/cgroup" + 1);
        if (!l) {
                free(list);
                return NULL;
        }
        list = l;
        memcpy(list + n, "/sys/fs/cgroup", sizeof "/sys/fs/cgroup");
        n += sizeof "/sys/fs/cgroup";
        list[n] = 0;
        return list;
}

/* The mount of mounts (cgroup_mounts()) that path lies in, NULL if none. */
static const char *mount_of(const char *path, const char *mounts) {
        for (const char *m = mounts; *m; m += strlen(m) + 1)
                if (path_under(path, m))
                        return m;
        return NULL;
}

/* The first PATH of the failing call that is a file system path into a
 * cgroup2 hierarchy (call_path, --except's, the batch's), with the mount it
 * lies in (in *ret_mount, to free); NULL if none. */
static const char *call_file_system_path(char **ret_mount) {
        _cleanup_free_ char *mounts = cgroup_mounts();
        const char *m = NULL, *path = NULL;

        if (!mounts)
                return NULL;
        if (call_path && (m = mount_of(call_path, mounts)))
                path = call_path;
        for (size_t i = 0; !path && i < n_arg_except; i++)
                if ((m = mount_of(arg_except[i], mounts)))
                        path = arg_except[i];
        for (size_t i = 0; !path && i < n_call_requests; i++)
                if ((m = mount_of(call_requests[i].path, mounts)))
                        path = call_requests[i].path;
        if (!path || !(*ret_mount = strdup(m)))
                return NULL;
        return path;
}

/* Whether mount/path is a directory: path, given as freezerd's, names a
 * group relative to the cgroup2 mount (as /proc/PID/cgroup and
 * systemd-cgls show it), which freezerd's root lies below. */
static bool is_dir_below_mount(const char *mount, const char *path) {
        _cleanup_free_ char *norm = NULL, *full = NULL;
        struct stat st;

        if (path_under(path, mount) || cg_path_normalize(path, &norm, NULL) < 0 || streq(norm, "/") ||
            asprintf(&full, "%s%s", mount, norm) < 0)
                return false;
        return stat(full, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The first PATH of the failing call (as call_file_system_path()) that names
 * a directory relative to a cgroup2 mount, with that mount (in *ret_mount,
 * to free); NULL if none.  Asked only of a NoSuchGroup, so where freezerd's
 * root is the mount itself no such path is found. */
static const char *call_mount_relative_path(char **ret_mount) {
        _cleanup_free_ char *mounts = cgroup_mounts();

        if (!mounts)
                return NULL;
        for (const char *m = mounts; *m; m += strlen(m) + 1) {
                const char *path = NULL;

                if (call_path && is_dir_below_mount(m, call_path))
                        path = call_path;
                for (size_t i = 0; !path && i < n_arg_except; i++)
                        if (is_dir_below_mount(m, arg_except[i]))
                                path = arg_except[i];
                for (size_t i = 0; !path && i < n_call_requests; i++)
                        if (call_requests[i].path && is_dir_below_mount(m, call_requests[i].path))
                                path = call_requests[i].path;
                if (path)
                        return (*ret_mount = strdup(m)) ? path : NULL;
        }
        return NULL;
}

/* The nearest ancestor of path that D-Bus can carry (valid UTF-8, no
 * sd-bus noncharacter), cut at a '/', as freezerd names it ("/" at least),
 * to free; NULL if path is such a path itself, or on a failed allocation. */
static char *utf8_ancestor(const char *path) {
        const unsigned char *p = (const unsigned char *) path, *cut = p;
        _cleanup_free_ char *prefix = NULL;
        char *norm = NULL;

        for (; *p; ) {
                size_t l = cg_utf8_char_len(p, true);

                if (l == 0)
                        break;
                if (*p == '/')
                        cut = p;
                p += l;
        }
        if (!*p)
                return NULL;
        prefix = strndup(path, (size_t) (cut - (const unsigned char *) path));
        if (!prefix)
                return NULL;
        if (!prefix[0] || cg_path_normalize(prefix, &norm, NULL) < 0)
                return strdup("/");
        return norm;
}

/* Whether a bus daemon serves the unix socket at path (given to --socket=
 * as freezerd's): it answers Hello and GetId, which freezerd's private
 * socket refuses.  Asked only once a call there failed (a bus daemon answers
 * the wire's call itself, and closes sd-bus' connection, which sends no
 * Hello).  Its name in buf where its process is known ("dbus-daemon"; not
 * for one started with --fork, whose listening process has exited), else "a
 * bus daemon"; NULL if no bus answers there. */
static const char *socket_bus_daemon(const char *path, char *buf, size_t size) {
        wire *w = NULL;
        int r;

        if (!path || wire_open_bus_at(path, "org.freedesktop.DBus", &w) < 0)
                return NULL;
        /* Not the 25 s of a call: this is only to word an error. */
        r = wire_call(w, "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", NULL, 0, 5 * USEC_PER_SEC, NULL,
                      0);
        wire_close(w);
        if (r < 0)
                return NULL;
        return socket_peer_comm(path, buf, size) ?: "a bus daemon";
}

/* Whether the character at p, of l bytes (cg_utf8_char_len(); 0: no UTF-8
 * character begins there), is shown escaped in a line of text: one that ends
 * or breaks a line where the text is read (a terminal, a pager, an editor, a
 * log viewer, str.splitlines()) - the control characters, C0, DEL and C1
 * (NEL, U+0085, among them), U+2028 LINE SEPARATOR and U+2029 PARAGRAPH
 * SEPARATOR - or a byte that is no UTF-8.  freezerd publishes no group whose
 * name holds a C0 control character, DEL or a byte that is no UTF-8, but it
 * does publish C1, U+2028 and U+2029 (and a path we were given may hold any). */
static bool char_escaped(const unsigned char *p, size_t l) {
        return l == 0 || *p < 0x20 || *p == 0x7f ||
               (l == 2 && p[0] == 0xc2 && p[1] < 0xa0) ||                                  /* U+0080..U+009F */
               (l == 3 && p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)); /* U+2028, U+2029 */
}

/* The n bytes at s into buf (room for 4 * n + 1), the characters of
 * char_escaped() as \xNN, byte by byte, and a backslash as "\\" (so that a
 * name holding a literal "\x0a" does not read as an escaped newline); with
 * message (freezerd's message, whose quotes show a backslash as "\\" and a
 * control character as \xNN themselves: cg_quote()) a backslash as it is.
 * Returns the length written, without the NUL. */
static size_t text_escape_n(char *buf, const char *s, size_t n, bool message) {
        const unsigned char *end = (const unsigned char *) s + n;
        size_t k = 0;

        for (const unsigned char *p = (const unsigned char *) s; p < end;) {
                size_t l = cg_utf8_char_len(p, false);

                if (l > (size_t) (end - p))
                        l = 0;
                if (char_escaped(p, l))
                        for (size_t i = 0; i < (l ?: 1); i++)
                                k += (size_t) sprintf(buf + k, "\\x%02x", *p++);
                else if (*p == '\\' && !message) {
                        buf[k++] = '\\';
                        buf[k++] = (char) *p++;
                } else
                        for (; l > 0; l--)
                                buf[k++] = (char) *p++;
        }
        buf[k] = 0;
        return k;
}

/* s into buf (room for 4 * strlen(s) + 1), as text output shows it
 * (text_escape_n(), backslashes doubled). */
static size_t text_escape_into(char *buf, const char *s) {
        return text_escape_n(buf, s, strlen(s), false);
}

/* The last PATH_Q_SLOTS paths path_q() put in double quotes, as they are
 * ("\"/g \""), to free: words_escape_n() finds them in a line of freezectl's
 * words.  As many as one line names: freeze --except's note, up to four
 * groups and the excluded one (note_frozen_in_excluded()). */
#define PATH_Q_SLOTS 8
static char *path_q_slots[PATH_Q_SLOTS];

/* The n bytes at s, freezectl's words on a line of standard error, into buf
 * (room for 4 * n + 1) as text_escape_n() shows them; but in a path that
 * path_q() put in double quotes a '"' as \" besides, so that the quotes
 * around it are the only bare ones ("/g\" " for "/g\" ").  This escapes the
 * line as it is made (path_q() quotes before the line is escaped: its own
 * \" would have its backslash doubled).  Returns the length written, without
 * the NUL. */
static size_t words_escape_n(char *buf, const char *s, size_t n) {
        size_t k = 0;

        for (;;) {
                const char *at = NULL;
                size_t at_len = 0;

                /* The first quoted path in s (the longest, of two that start there). */
                for (size_t i = 0; i < PATH_Q_SLOTS; i++) {
                        const char *m;
                        size_t l;

                        if (!path_q_slots[i])
                                continue;
                        l = strlen(path_q_slots[i]);
                        m = memmem(s, n, path_q_slots[i], l);
                        if (m && (!at || m < at || (m == at && l > at_len))) {
                                at = m;
                                at_len = l;
                        }
                }
                if (!at)
                        break;
                k += text_escape_n(buf + k, s, (size_t) (at - s), false);
                buf[k++] = '"';
                for (const char *p = at + 1, *end = at + at_len - 1; p < end;) {
                        const char *q = memchr(p, '"', (size_t) (end - p)) ?: end;

                        k += text_escape_n(buf + k, p, (size_t) (q - p), false);
                        if (q < end) {
                                buf[k++] = '\\';
                                buf[k++] = '"';
                                q++;
                        }
                        p = q;
                }
                buf[k++] = '"';
                n -= (size_t) (at + at_len - s);
                s = at + at_len;
        }
        return k + text_escape_n(buf + k, s, n, false);
}

/* s as a line of text output shows it (text_escape_into()): s itself where
 * nothing in it is escaped, else a copy in *tofree (to free).  s, as it is,
 * on a failed allocation: it is only shown. */
static const char *text_shown(const char *s, char **tofree) {
        *tofree = NULL;
        for (const unsigned char *p = (const unsigned char *) s; *p;) {
                size_t l = cg_utf8_char_len(p, false);

                if (char_escaped(p, l) || *p == '\\') {
                        *tofree = malloc(4 * strlen(s) + 1);
                        if (!*tofree)
                                return s;
                        text_escape_into(*tofree, s);
                        return *tofree;
                }
                p += l;
        }
        return s;
}

/* freezerd's message, while vlog_failure() writes the line that quotes it
 * (or the batch parser's, batch_load()), and where in that line it may start
 * (after the caller's words): freezerd
 * escapes the paths it quotes itself (cg_quote(): a control character as
 * \xNN, a backslash as "\\"), so its backslashes are shown as they are, not
 * doubled again. */
static const char *verbatim_message;
static size_t verbatim_from;

/* Write "freezectl: " and line to stderr as one line, in one write(2) (so
 * that the lines of freezectls sharing a log do not mix byte by byte: stderr
 * is unbuffered), escaped as the text on standard output (text_shown()): a
 * newline in a path we were given, or in a message, and the bytes that are
 * not UTF-8 (of a path we were given: the journal keeps a line with one as a
 * blob, not as text) as \xNN, a backslash as "\\" (but in freezerd's message, which
 * escapes so itself: verbatim_message). */
static void put_error_line(const char *line) {
        size_t k, len = strlen(line), at = len, n = 0;
        const char *m;
        char *buf;

        if (verbatim_message && *verbatim_message && verbatim_from <= len &&
            (m = strstr(line + verbatim_from, verbatim_message))) {
                at = (size_t) (m - line);
                n = strlen(verbatim_message);
        }
        buf = malloc(sizeof(PROGRAM ": ") + 4 * len + 1);
        if (!buf) {
                fputs(PROGRAM ": out of memory\n", stderr);
                return;
        }
        k = (size_t) sprintf(buf, PROGRAM ": ");
        k += words_escape_n(buf + k, line, at);
        k += text_escape_n(buf + k, line + at, n, true);
        k += words_escape_n(buf + k, line + at + n, len - at - n);
        buf[k++] = '\n';
        (void) fwrite(buf, 1, k, stderr);
        free(buf);
}

/* One error line of fmt, and suffix after it. */
_printf_(2, 0)
static void vlog_error(const char *suffix, const char *fmt, va_list ap) {
        _cleanup_free_ char *what = NULL, *line = NULL;

        if (vasprintf(&what, fmt, ap) < 0 || asprintf(&line, "%s%s", what, suffix) < 0) {
                put_error_line("out of memory");
                return;
        }
        put_error_line(line);
}

_printf_(1, 2)
static void log_error(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vlog_error("", fmt, ap);
        va_end(ap);
}

/* Whether everything printed reached standard output; if not, says so.
 * stdio drops what a failed write(2) did not take, so a failure inside an
 * earlier printf() leaves nothing for fflush() to fail on, only the error
 * flag (and no errno: the one at hand would be some later call's). */
static bool stdout_flushed(void) {
        static bool said = false; /* once: the watch, then its exit */

        if (fflush(stdout) != 0) {
                if (!said)
                        log_error("cannot write output: %s", strerror(errno));
                said = true;
                return false;
        }
        if (ferror(stdout)) {
                if (!said)
                        log_error("cannot write output");
                said = true;
                return false;
        }
        return true;
}

_printf_(1, 2)
static int usage_error(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vlog_error(" (see --help)", fmt, ap);
        va_end(ap);
        return -EINVAL;
}

/* --socket= was given a bus' socket (peer, its daemon, serves it): said
 * with what to do instead, in place of the error the bus caused. */
static void log_bus_as_socket(const char *what, const char *peer) {
        log_error("%s: %s is a D-Bus bus, served by %s, not freezerd's private socket: use --address=unix:path=%s",
                  what, arg_socket, peer, arg_socket);
}

/* Report a failed call: "freezectl: <what>: <Error>: <message>", from the
 * D-Bus error's name and message where there is one, else from r. */
static void log_failure_line(const char *what, const char *name, const char *message, int r);
static const char *other_buses_hint(int r);

/* freezerd's sentence before the flags a Timeout of a call that set flags of
 * groups it did not name leaves set (operation_stays() in daemon/manager.c). */
#define TIMEOUT_STAYS_SENTENCE \
        ". Without ROLLBACK_ON_TIMEOUT the flags it wrote stay as asked, and the kernel goes on with them: "

/* Whether list, the text after freezerd's sentence that names the flags
 * that stay (operation_stays()), is such a list to its end: paths separated
 * by ", ", then maybe " and N more" (*ret_cut).  freezerd puts a path in
 * double quotes where it holds a '"' or what separates the list or ends it
 * (", ", " and ", ": ", ". ", also where its end meets them), a '"' inside
 * as \" (its backslashes doubled); so the same words inside a path (a group named "x and 3 more", or one
 * holding the sentence) are in quotes, and a list that starts inside a quoted
 * path meets its closing quote bare: no such list.  Each path starts with
 * '/' (or '"/'): a path of a NoSuchGroup that holds the sentence is followed
 * by " does not exist", no list.  From a freezerd that does not quote so
 * (or in any other message), false. */
static bool stays_list(const char *list, bool *ret_cut) {
        const char *p = list;

        for (;;) {
                if (*p == '"') {
                        if (p[1] != '/')
                                return false;
                        for (p++; *p && *p != '"'; p++)
                                if (*p == '\\' && p[1])
                                        p++;
                        if (*p++ != '"')
                                return false;
                } else {
                        const char *start = p;

                        /* freezerd's paths are absolute: "etc does not exist"
                         * after the same words in a path is no list. */
                        if (*p != '/')
                                return false;
                        for (; *p && !startswith(p, ", ") && !startswith(p, " and "); p++)
                                if (*p == '"' || startswith(p, ": ") || startswith(p, ". "))
                                        return false;
                        if (p == start)
                                return false;
                }
                if (!*p) {
                        *ret_cut = false;
                        return true;
                }
                if (startswith(p, ", ")) {
                        p += strlen(", ");
                        continue;
                }
                if (!startswith(p, " and "))
                        return false;
                p += strlen(" and ");
                if (*p < '0' || *p > '9')
                        return false;
                while (*p >= '0' && *p <= '9')
                        p++;
                *ret_cut = true;
                return streq(p, " more");
        }
}

/* The last sentence in message that a list of paths follows to its end
 * (stays_list()), NULL if none; *ret_cut: whether it leaves some out. */
static const char *stays_find(const char *message, const char *sentence, bool *ret_cut) {
        const char *found = NULL;
        bool cut;

        for (const char *p = message; p && (p = strstr(p, sentence)); p++)
                if (stays_list(p + strlen(sentence), &cut)) {
                        found = p;
                        *ret_cut = cut;
                }
        return found;
}

/* freezerd's sentence of a Timeout with ROLLBACK_ON_TIMEOUT whose call wrote
 * no flag (operation_unchanged() in daemon/manager.c): "...: the cgroup.freeze
 * of the group already as asked was 1 before this call and stays 1, and the
 * kernel goes on freezing it: /hang".  The last one whose fixed words (no
 * '"') run to the ": " that a list of paths follows to the end
 * (stays_list()), NULL if none: the same words in a path, which freezerd
 * puts in double quotes, are no such sentence. */
#define ROLLBACK_UNCHANGED_SENTENCE ". ROLLBACK_ON_TIMEOUT had nothing to restore: the cgroup.freeze of the "
static const char *rollback_unchanged_find(const char *message) {
        const char *found = NULL;
        bool cut;

        for (const char *p = message; p && (p = strstr(p, ROLLBACK_UNCHANGED_SENTENCE)); p++) {
                const char *words = p + strlen(ROLLBACK_UNCHANGED_SENTENCE), *colon = strstr(words, ": ");

                if (colon && !memchr(words, '"', (size_t) (colon - words)) && stays_list(colon + 2, &cut))
                        found = p;
        }
        return found;
}

_printf_(4, 0)
static void vlog_failure(const char *name, const char *message, int r, const char *fmt, va_list ap) {
        _cleanup_free_ char *what = NULL, *trimmed = NULL;

        if (vasprintf(&what, fmt, ap) < 0) {
                put_error_line("out of memory");
                return;
        }
        /* A bus daemon's messages end with a newline, which has no place in
         * the middle of our line.  Only that: freezerd's may end with a path
         * whose trailing space is its own. */
        if (message && (trimmed = strdup(message))) {
                size_t n = strlen(trimmed);
                while (n > 0 && trimmed[n - 1] == '\n')
                        trimmed[--n] = 0;
                message = trimmed;
        }

        /* freezerd says what becomes of the flags "Without
         * ROLLBACK_ON_TIMEOUT", its bus flag (daemon/manager.c): said in
         * freezectl's terms, its option, where freezerd's sentence is: the
         * end of a Timeout's message, or, where a Timeout (of a call that
         * wrote groups it did not name: freeze --except, --recursive) or a
         * Cancelled (a batch's flag reversed, an Untrack) or a batch's
         * NoSuchGroup names the flags that stay, the last such sentence
         * that their paths follow to the end (stays_find()).  Not the same words in a group's path, which
         * freezerd puts in double quotes.  (--json keeps freezerd's message as
         * it is.) */
        static const char flag_words[] = ". Without ROLLBACK_ON_TIMEOUT",
                          timeout_end[] = ". Without ROLLBACK_ON_TIMEOUT the flags stay as asked, and the kernel "
                                          "goes on with them",
                          stays[] = ". Without ROLLBACK_ON_TIMEOUT the flags it wrote stay as asked: ",
                          timeout_stays[] = TIMEOUT_STAYS_SENTENCE;
        _cleanup_free_ char *translated = NULL;
        const char *at = NULL;
        size_t len = message ? strlen(message) : 0;
        bool cut;
        bool timeout = streq_ptr(name, "org.freezerd.Freezer1.Error.Timeout"),
             cancelled = streq_ptr(name, "org.freezerd.Freezer1.Error.Cancelled") ||
                         streq_ptr(name, "org.freezerd.Freezer1.Error.NoSuchGroup");
        if (!arg_rollback && message && timeout && len >= strlen(timeout_end) &&
            streq(message + len - strlen(timeout_end), timeout_end))
                at = message + len - strlen(timeout_end);
        else if (!arg_rollback && message && (timeout || cancelled))
                at = stays_find(message, timeout ? timeout_stays : stays, &cut);
        if (at && asprintf(&translated, "%.*s. Without --rollback%s", (int) (at - message), message,
                           at + strlen(flag_words)) >= 0)
                message = translated;
        /* With --rollback, a Timeout whose call wrote no flag says that
         * --rollback had nothing to restore. */
        if (arg_rollback && message && timeout && (at = rollback_unchanged_find(message)) &&
            asprintf(&translated, "%.*s. --rollback%s", (int) (at - message), message,
                     at + strlen(". ROLLBACK_ON_TIMEOUT")) >= 0)
                message = translated;
        /* A NotTracked of Untrack() ends with freezerd's methods, which a
         * freezectl user knows as its commands.  Only at the end, where
         * freezerd's words are: the paths before them are its to quote.
         * Not in the NotTracked that ends with a path ("... (in the tracked
         * subtree at IN)"), whose end may be a path's that ends as those
         * words do: where a path holds those words instead, its message is
         * left untranslated, freezerd's as it is. */
        static const struct {
                const char *bus, *ours;
        } not_tracked_ends[] = {
                { ": Untrack() that root (see Track() and the \"track\" setting)",
                  ": untrack that root (see 'freezectl track' and the \"track\" setting)" },
                { " is not a tracked root, nor in a tracked subtree (see Track() and the \"track\" setting)",
                  " is not a tracked root, nor in a tracked subtree (see 'freezectl track' and the \"track\" "
                  "setting)" },
        };
        _cleanup_free_ char *ours = NULL;
        if (message && streq_ptr(name, "org.freezerd.Freezer1.Error.NotTracked") &&
            !strstr(message, " (in the tracked subtree at "))
                for (size_t i = 0; i < ELEMENTSOF(not_tracked_ends); i++) {
                        size_t l = strlen(message), e = strlen(not_tracked_ends[i].bus);

                        if (l >= e && streq(message + l - e, not_tracked_ends[i].bus)) {
                                if (asprintf(&ours, "%.*s%s", (int) (l - e), message, not_tracked_ends[i].ours) >= 0)
                                        message = ours;
                                break;
                        }
                }

        verbatim_message = message;
        verbatim_from = strlen(what);
        log_failure_line(what, name, message, r);
        verbatim_message = NULL;
}

/* vlog_failure()'s line, what being the caller's words. */
static void log_failure_line(const char *what, const char *name, const char *message, int r) {
        const char *s;

        /* Failures of the connection, not of freezerd's work: said as such,
         * so that a call that timed out on our side does not read like
         * freezerd's own Timeout (the kernel did not finish). */
        if (streq_ptr(name, "org.freedesktop.DBus.Error.ServiceUnknown") ||
            streq_ptr(name, "org.freedesktop.DBus.Error.NameHasNoOwner")) {
                log_error("%s: freezerd is not running (nobody owns " FREEZER_SERVICE " on the bus)%s", what,
                          connected_private ? "" : other_buses_hint(0));
                return;
        }
        if ((streq_ptr(name, "org.freedesktop.DBus.Error.NoReply") && message &&
             strstr(message, "recipient disconnected")) ||
            (streq_ptr(name, "org.freedesktop.DBus.Error.Disconnected") && !connected_private &&
             streq_ptr(message, MESSAGE_LEFT_BUS_UNANSWERED))) {
                /* dbus-daemon's "Message recipient disconnected from message bus
                 * without replying" (over the wire), which libfreezer names
                 * Disconnected (freeze --except, thaw --recursive): freezerd
                 * is gone, it does not go on, and the bus is still there.
                 * Said alike whichever carried the call. */
                log_error("%s: freezerd left the bus without answering%s", what, left_during_call());
                return;
        }
        if (streq_ptr(name, "org.freedesktop.DBus.Error.Timeout") ||
            streq_ptr(name, "org.freedesktop.DBus.Error.NoReply")) {
                /* A bus daemon gives up on a reply after its reply_timeout,
                 * whatever the call's --timeout, and freezectl after the
                 * call's: freezerd, still at work, goes on with it, or (a
                 * freezerd stopped) has not read it yet, which the error
                 * alone does not say. */
                if (goes_on[0])
                        log_error("%s: no reply from freezerd (%s); %s", what, message ?: strerror(-r), goes_on);
                else
                        log_error("%s: no reply from freezerd (%s)", what, message ?: strerror(-r));
                return;
        }
        if (arg_bus == BUS_PRIVATE && message && !startswith(message, "Unknown ") &&
            (streq_ptr(name, "org.freedesktop.DBus.Error.UnknownMethod") ||
             streq_ptr(name, "org.freedesktop.DBus.Error.UnknownInterface") ||
             streq_ptr(name, "org.freedesktop.DBus.Error.UnknownObject"))) {
                /* A bus daemon's socket given as freezerd's: the call went to
                 * the bus daemon itself, which words these errors otherwise
                 * than freezerd's sd-bus ("Unknown method ...", "Unknown
                 * object ...": a group gone between two calls, say). */
                char comm[64];
                const char *peer = socket_bus_daemon(arg_socket, comm, sizeof comm);

                if (peer)
                        log_bus_as_socket(what, peer);
                else
                        log_error("%s: %s: %s (is %s a bus? a bus is reached with --address=unix:path=%s)", what,
                                  startswith(name, "org.freedesktop.DBus.Error."), message, arg_socket, arg_socket);
                return;
        }
        if (streq_ptr(name, "org.freedesktop.DBus.Error.Disconnected")) {
                char comm[64];
                const char *peer = connected_private && arg_bus == BUS_PRIVATE
                                           ? socket_bus_daemon(arg_socket, comm, sizeof comm)
                                           : NULL;

                /* On a bus it is the bus that went (or refused us: a session
                 * bus closes the connection of another uid, root's too).  On
                 * a private socket that a bus daemon serves, the daemon closed
                 * a connection that never said Hello: said whether or not its
                 * process is known (the pid a socket names is the one that
                 * listened, gone for a dbus-daemon --fork). */
                if (peer)
                        log_bus_as_socket(what, peer);
                else
                        log_error("%s: lost the connection to %s (%s)%s", what,
                                  connected_private ? "freezerd (its private socket)" : "the bus",
                                  message ?: strerror(-r), connected_private ? left_during_call() : "");
                return;
        }

        /* A file system path given as PATH: "/sys/fs/cgroup/x does not exist"
         * is true in freezerd's terms only, and read as if /sys/fs/cgroup/x
         * were missing.  Told by the path given (not by the message, which
         * names any path that merely contains "/sys/fs/cgroup/"), against
         * where cgroup2 is mounted. */
        _cleanup_free_ char *mount = NULL;
        if (streq_ptr(name, "org.freezerd.Freezer1.Error.NoSuchGroup") && call_file_system_path(&mount)) {
                log_error("%s: NoSuchGroup: %s (PATH names a cgroup relative to freezerd's cgroup root, its "
                          "CgroupRoot property, not a file system path: /pods/a, not %s/.../pods/a)",
                          what, message ?: "no such group", mount);
                return;
        }
        /* A path relative to the cgroup2 mount, where freezerd's root lies
         * below it: "does not exist" alone reads as if the group were gone,
         * while the user copied it from /proc/PID/cgroup. */
        const char *below_mount;
        if (streq_ptr(name, "org.freezerd.Freezer1.Error.NoSuchGroup") &&
            (below_mount = call_mount_relative_path(&mount))) {
                _cleanup_free_ char *norm = NULL;

                (void) cg_path_normalize(below_mount, &norm, NULL);
                log_error("%s: NoSuchGroup: %s (PATH names a cgroup relative to freezerd's cgroup root, its "
                          "CgroupRoot property, not to the cgroup2 mount: for %s%s give its path below "
                          "freezerd's root; a group outside that root freezerd does not reach)",
                          what, message ?: "no such group", mount, norm ?: below_mount);
                return;
        }

        /* A group whose name is not UTF-8: it exists, but no call can name
         * it, and "not valid UTF-8" alone leaves the user stuck with it.  Its
         * nearest ancestor that D-Bus carries reaches it.  (An --except=
         * path so named is not told: that group cannot be left out.) */
        _cleanup_free_ char *ancestor = NULL;
        if (streq_ptr(name, "org.freedesktop.DBus.Error.InvalidArgs") && message && call_path &&
            (ancestor = utf8_ancestor(call_path))) {
                if (streq(ancestor, "/"))
                        log_error("%s: InvalidArgs: %s (D-Bus carries UTF-8 only, so freezerd follows no group so "
                                  "named: thaw --recursive / clears its flag)",
                                  what, message);
                else
                        log_error("%s: InvalidArgs: %s (D-Bus carries UTF-8 only, so freezerd follows no group so "
                                  "named: reach it through %s, whose freeze freezes it too and whose thaw "
                                  "--recursive clears its flag)",
                                  what, message, ancestor);
                return;
        }

        /* freezerd's own failure (its runtime directory, a cgroup write the
         * kernel refused...), whose message may well end with "Permission
         * denied": said as freezerd's, not as a refusal of the caller's
         * (AccessDenied). */
        if (streq_ptr(name, "org.freedesktop.DBus.Error.Failed") && message) {
                log_error("%s: freezerd failed: %s", what, message);
                return;
        }

        if (name) {
                if ((s = startswith(name, "org.freezerd.Freezer1.Error.")) ||
                    (s = startswith(name, "org.freedesktop.DBus.Error.")))
                        name = s;
                else if (startswith(name, "System.Error."))
                        name = NULL; /* the message says it all */
        }

        if (name && message)
                log_error("%s: %s: %s", what, name, message);
        else if (message)
                log_error("%s: %s", what, message);
        else if (name)
                log_error("%s: %s", what, name);
        else
                log_error("%s: %s", what, strerror(-r));
}

/* A failed libfreezer call. */
_printf_(3, 4)
static void log_failure(freezer *f, int r, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vlog_failure(freezer_last_error_name(f), freezer_last_error_message(f), r, fmt, ap);
        va_end(ap);
}

/* ---- output helpers ---- */

static bool getenv_set(const char *name) {
        const char *e = getenv(name);

        return e && *e;
}

/* Like systemd: UTF-8 unless the locale says otherwise. An unset locale (plain
 * "C" without LANG/LC_*) counts as UTF-8 capable. */
static bool is_locale_utf8(void) {
        const char *set;

        set = nl_langinfo(CODESET);
        if (set && streq(set, "UTF-8"))
                return true;

        set = setlocale(LC_CTYPE, NULL);
        if (!set)
                return true;

        return (streq(set, "C") || streq(set, "POSIX")) &&
                !getenv_set("LC_ALL") && !getenv_set("LC_CTYPE") && !getenv_set("LANG");
}

/* json-c's pretty printing puts an empty array or object over two lines
 * ("[", then "]" below it): printed "[]" and "{}", as jq and Python's json
 * print them.  A line break in that text is always json-c's own (a string's
 * is escaped, "\n"), so a "[" or "{" that a line break and only spaces
 * separate from a "]" or "}" is an empty one. */
static void json_text_compact_empty(char *s) {
        char *to = s;

        for (const char *from = s; *from;) {
                if ((*from == '[' || *from == '{') && from[1] == '\n') {
                        const char *end = from + 2;

                        end += strspn(end, " ");
                        if (*end == (*from == '[' ? ']' : '}')) {
                                *to++ = *from;
                                *to++ = *end;
                                from = end + 1;
                                continue;
                        }
                }
                *to++ = *from++;
        }
        *to = 0;
}

static int print_json(struct json_object *o) {
        _cleanup_free_ char *text = NULL;
        const char *s;

        s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                              JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!s)
                return -ENOMEM;
        text = strdup(s);
        if (!text)
                return -ENOMEM;
        json_text_compact_empty(text);

        puts(text);
        return 0;
}

/* Add v to o under key, taking ownership of v in all cases. A NULL v is the
 * failed allocation of a value: use json_object_object_add() for nulls. */
static int json_add(struct json_object *o, const char *key, struct json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static int json_add_string_or_null(struct json_object *o, const char *key, const char *s) {
        if (!s)
                return json_object_object_add(o, key, NULL) < 0 ? -ENOMEM : 0;
        return json_add(o, key, json_object_new_string(s));
}

/* Append v to the array a, taking ownership of v in all cases. */
static int json_append(struct json_object *a, struct json_object *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_array_add(a, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

/* A JSON string of s, a command-line argument (a PATH), which may be any
 * bytes: JSON text must be UTF-8, and a parser refuses the whole output for
 * one invalid byte.  Each byte that begins no valid sequence becomes U+FFFD,
 * as a decoder that replaces errors shows it.  NULL on a failed allocation. */
static struct json_object *json_string_of_arg(const char *s) {
        _cleanup_free_ char *copy = NULL;
        size_t n = 0;

        copy = malloc(strlen(s) * 3 + 1);
        if (!copy)
                return NULL;
        for (const unsigned char *p = (const unsigned char *) s; *p;) {
                size_t k = cg_utf8_char_len(p, false);

                if (k == 0) {
                        memcpy(copy + n, "\xef\xbf\xbd", 3); /* U+FFFD */
                        n += 3;
                        p++;
                } else {
                        memcpy(copy + n, p, k);
                        n += k;
                        p += k;
                }
        }
        copy[n] = 0;
        return json_object_new_string(copy);
}

static void log_oom(void) {
        fprintf(stderr, PROGRAM ": out of memory\n");
}

/* Print o as the verb's JSON output and free it; a NULL o is a failed
 * allocation while building it. Returns the verb's exit status. */
static int print_json_and_put(struct json_object *o) {
        int r;

        r = o ? print_json(o) : -ENOMEM;
        json_object_put(o);
        if (r < 0) {
                log_oom();
                return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}

static const char *state_str(freezer_state s) {
        const char *t = freezer_state_to_string(s);

        return t ?: "unknown";
}

/* ---- interrupted while waiting ---- */

/* SIGINT or SIGTERM while freezerd carries out a call ends freezectl, not
 * the call: freezerd goes on with what it wrote, and nothing would say so.
 * The handler writes the line made beforehand (write(2) is safe in a signal
 * handler, formatting is not), then dies of the signal as it would have.
 * Room for goes_on escaped (each byte at most 4: \xNN) and the prefix: a
 * line cut would lose its end, and its newline. */
static char interrupt_line[4 * sizeof goes_on + 32];
static volatile sig_atomic_t interrupt_len; /* 0: no call waits, nothing to say */

static void on_interrupt(int sig) {
        if (interrupt_len > 0) {
                ssize_t k = write(STDERR_FILENO, interrupt_line, (size_t) interrupt_len);
                (void) k;
        }
        signal(sig, SIG_DFL);
        raise(sig);
}

/* Catch the signals, once, unless they are ignored (a job started with '&'
 * by a shell without job control must stay deaf to the terminal's ^C). */
static void interrupt_install(void) {
        static bool installed;
        const int sigs[] = { SIGINT, SIGTERM };

        if (installed)
                return;
        installed = true;
        for (size_t i = 0; i < ELEMENTSOF(sigs); i++) {
                struct sigaction old, sa = { .sa_handler = on_interrupt };
                if (sigaction(sigs[i], NULL, &old) < 0 || old.sa_handler == SIG_IGN)
                        continue;
                sigemptyset(&sa.sa_mask);
                (void) sigaction(sigs[i], &sa, NULL);
        }
}

/* Say what to tell while the next call waits: what is the call's own words,
 * such as "the freeze of /pods".  The line is made with nothing to say in
 * between, so that a signal never finds half of it. */
_printf_(1, 2)
static void interrupt_say(const char *fmt, ...) {
        char raw[CALL_WHAT_MAX], line[4 * sizeof goes_on];
        va_list ap;
        int n;

        interrupt_install();
        interrupt_len = 0;
        va_start(ap, fmt);
        (void) vsnprintf(raw, sizeof raw, fmt, ap);
        va_end(ap);
        (void) snprintf(call_what, sizeof call_what, "%s", raw);
        /* freezerd reads the caller's uid when it reads a call, and refuses
         * the call of a client that left the bus by then (it cannot tell
         * whose it was): a freezerd stopped or busy past the call's timeout
         * refuses it once it reads it.  A call on the private socket is
         * carried out whenever it is read: its peer's credentials are the
         * socket's. */
        if (connected_private)
                (void) snprintf(goes_on, sizeof goes_on,
                                "freezerd may still carry out %s: if it runs, it goes on with the call, or carries "
                                "it out once it reads it%s; see freezectl status",
                                raw,
                                arg_no_wait    ? ""
                                : arg_rollback ? " (with --rollback it restores the flags if the kernel does not "
                                                 "confirm in time)"
                                               : " (the flags it writes stay)");
        else
                (void) snprintf(goes_on, sizeof goes_on,
                                "freezerd may or may not carry out %s: a call it was already working on goes on%s, "
                                "one it reads only after freezectl left the bus is refused; see freezectl status",
                                raw,
                                arg_no_wait    ? ""
                                : arg_rollback ? " (with --rollback it restores the flags if the kernel does not "
                                                 "confirm in time)"
                                               : " (the flags it wrote stay)");
        /* goes_on goes into an error line, which put_error_line() escapes;
         * the handler writes this one as it is, not through put_error_line():
         * escaped here, once, as every other line on stderr is. */
        words_escape_n(line, goes_on, strlen(goes_on));
        n = snprintf(interrupt_line, sizeof interrupt_line, PROGRAM ": interrupted: %s\n", line);
        interrupt_len = n <= 0 ? 0 : (size_t) n >= sizeof interrupt_line ? (int) sizeof interrupt_line - 1 : n;
}

/* The call returned: a signal from now on ends freezectl with nothing to say. */
static void interrupt_done(void) {
        interrupt_len = 0;
}

/* ---- freeze, thaw ---- */

/* The flags of freeze, thaw and batch requests, from the options. */
static uint64_t request_flags(void) {
        uint64_t flags = 0;

        if (arg_no_wait)
                flags |= FREEZER_NO_WAIT;
        if (arg_rollback)
                flags |= FREEZER_ROLLBACK_ON_TIMEOUT;
        if (arg_recursive)
                flags |= FREEZER_RECURSIVE;
        if (arg_skip_missing)
                flags |= FREEZER_SKIP_MISSING;
        return flags;
}

/* What frozen_by() names for a freeze above freezerd's cgroup root, which
 * freezerd's API gives no path of (a group's path is relative to its root).
 * Not a PATH (no leading "/"), so a --json reader tells it apart. */
#define FROZEN_ABOVE_ROOT "above-root"

/* What frozen_by() names when what freezes path is a group that freezerd does
 * not track, which it cannot name without tracking it.  Not a PATH either. */
#define FROZEN_UNTRACKED "untracked"

#define FROZEN_BY_PARENT_ERROR "org.freezerd.Freezer1.Error.FrozenByParent"

static bool state_by_parent(freezer_state state) {
        return state == FREEZER_STATE_FROZEN_BY_PARENT || state == FREEZER_STATE_FREEZING_BY_PARENT;
}

static int group_cmp(const void *a, const void *b) {
        const freezer_group *x = a, *y = b;

        return strcmp(x->path, y->path);
}

static const freezer_group *listed_group(const freezer_group *groups, size_t n, const char *path) {
        freezer_group key = { .path = (char *) path };

        return n > 0 ? bsearch(&key, groups, n, sizeof(groups[0]), group_cmp) : NULL;
}

/* Whether a group's own freeze flag is set, as its FreezerState says it. */
static bool state_own_flag(freezer_state state) {
        return state == FREEZER_STATE_FROZEN || state == FREEZER_STATE_FREEZING;
}

/* What frozen_by() found: by, and where groups that freezerd does not track
 * lie between path and by, the nearest tracked group below them (gap_low) and
 * above them (gap_high, NULL if none is). */
typedef struct frozen_by_result {
        char *by;
        char *gap_low;
        char *gap_high;
} frozen_by_result;

static void frozen_by_result_clear(frozen_by_result *fb) {
        fb->by = mfree(fb->by);
        fb->gap_low = mfree(fb->gap_low);
        fb->gap_high = mfree(fb->gap_high);
}

/* What freezes the group at path, whose state is state, from groups (a
 * listing, sorted by path), in ret->by: the nearest ancestor whose own flag
 * is set ("/" too: the cgroup root's own flag, which freezerd does not
 * write), FROZEN_ABOVE_ROOT, or FROZEN_UNTRACKED; NULL if nothing above path
 * freezes it (or out of memory: this is only a note).  The one walk behind
 * status, list and thaw --recursive, so that "frozen_by" means the same in
 * all three.
 *
 * The ancestors' flags come from the listing: a GetGroup of one that freezerd
 * does not track (above the subtrees it was told to track, or one it does not
 * follow) would track it, its subtree with it, and for good.  Such a group is
 * skipped, and said (ret->gap_*): the nearest flag above it still freezes
 * path, but the skipped one may too; and where the tracked group above it is
 * not frozen at all while the one below it is frozen by a parent, the skipped
 * one is what freezes path (FROZEN_UNTRACKED).
 *
 * freezerd's listing is "/" and whole subtrees (a tracked group's descendants
 * are all tracked; the ancestors of a track root are kept unpublished), so
 * the untracked groups above path are one run: between its track root and
 * "/".  Were a listing ever to hold a tracked group between two runs, the
 * gap is the span of them all, from the tracked group below the first to the
 * one above the last: a freeze in any of them lies in it, and a note naming
 * the first run alone would hide the other.
 *
 * unsettled: path's own state may not have settled yet (after a thaw with
 * --no-wait: still "frozen", or "thawing"), but the flags above it are what
 * they will stay: every ancestor is looked at, and the states of the tracked
 * ones above path decide. */
static void listed_frozen_by(const freezer_group *groups, size_t n, const char *path, freezer_state state,
                             bool unsettled, frozen_by_result *ret) {
        _cleanup_free_ char *up = NULL;
        const char *by = NULL, *below = path, *gap_low = NULL, *gap_high = NULL;
        bool below_by_parent = state_by_parent(state);

        *ret = (frozen_by_result) {};
        if (!unsettled && !below_by_parent)
                return;
        up = strdup(path);
        if (!up)
                return;
        for (char *slash; !streq(up, "/") && (slash = strrchr(up, '/'));) {
                const freezer_group *a;

                if (slash == up)
                        slash[1] = 0; /* "/" */
                else
                        *slash = 0;
                a = listed_group(groups, n, up);
                if (!a) {
                        if (!gap_low)
                                gap_low = below;
                        gap_high = NULL; /* another run: the gap goes on to the group above it */
                        continue;
                }
                if (gap_low && !gap_high)
                        gap_high = a->path;
                if (state_own_flag(a->state)) {
                        by = a->path;
                        goto found;
                }
                /* Neither frozen by its own flag nor by a parent: what
                 * freezes the group below the gap, if anything, lies
                 * between, untracked. */
                if (gap_low && !state_by_parent(a->state)) {
                        if (below_by_parent)
                                by = FROZEN_UNTRACKED;
                        goto found;
                }
                below = a->path;
                below_by_parent = state_by_parent(a->state);
        }
        /* Frozen by a parent, and no flag set up to the root: one above it,
         * as freezerd's FrozenByParent says of a plain thaw.  Unless "/" was
         * not listed, below untracked groups: then it may be one of those. */
        if (below_by_parent)
                by = gap_low && !gap_high ? FROZEN_UNTRACKED : FROZEN_ABOVE_ROOT;
found:
        if (by) {
                ret->by = strdup(by);
                if (gap_low) {
                        ret->gap_low = strdup(gap_low);
                        ret->gap_high = gap_high ? strdup(gap_high) : NULL;
                        /* Half a gap would say that nothing above it is
                         * tracked: none, out of memory. */
                        if (!ret->gap_low || (gap_high && !ret->gap_high)) {
                                ret->gap_low = mfree(ret->gap_low);
                                ret->gap_high = mfree(ret->gap_high);
                        }
                }
        }
}

/* After a thaw --recursive of path returned: what still freezes it, in ret
 * (listed_frozen_by()), or nothing if it cannot be looked up (the thaw
 * succeeded, this is only its note). */
static void frozen_by(freezer *f, const char *path, frozen_by_result *ret) {
        _cleanup_free_ char *up = NULL;
        freezer_group g = {}, *groups = NULL;
        size_t n = 0;
        freezer_state state;
        bool freeze;

        *ret = (frozen_by_result) {};
        if (cg_path_normalize(path, &up, NULL) < 0 || freezer_get_group(f, up, &g) < 0)
                return;
        state = g.state;
        freeze = g.freeze;
        freezer_group_clear(&g);

        /* "/" stands for the groups below the root: a recursive thaw leaves
         * the root's own flag alone, and it freezes them all. */
        if (streq(up, "/") && freeze) {
                ret->by = strdup("/");
                return;
        }
        if (!arg_no_wait && !state_by_parent(state))
                return;
        if (freezer_list(f, &groups, &n) < 0)
                return;
        if (n > 0)
                qsort(groups, n, sizeof(groups[0]), group_cmp);
        listed_frozen_by(groups, n, up, state, arg_no_wait, ret);
        freezer_group_array_free(groups, n);
}

static const char *path_q_list(const char *path);

/* Where fb's walk skipped groups that freezerd does not track, in the words
 * of the note and of status ("between A and B that freezerd does not
 * track", "above A ..." if none above them is tracked), to free; NULL if it
 * skipped none (or out of memory).  With quote, A and B as the note's words
 * name a path joined by " and " (path_q_list(): a group named "/x and /y"
 * reads as one); status prints them as they are. */
static char *untracked_gap(const frozen_by_result *fb, bool quote) {
        char *gap;

        if (!fb->gap_low ||
            asprintf(&gap, "%s %s%s%s that freezerd does not track", fb->gap_high ? "between" : "above",
                     quote ? path_q_list(fb->gap_low) : fb->gap_low, fb->gap_high ? " and " : "",
                     fb->gap_high ? (quote ? path_q_list(fb->gap_high) : fb->gap_high) : "") < 0)
                return NULL;
        return gap;
}

/* "untracked_between", wherever "frozen_by" is given: [A, B], the tracked
 * groups around the ones that freezerd does not track which the walk
 * skipped (B null if none above them is), or null if it skipped none.  Such
 * a group may be what freezes the group, nearer than "frozen_by" names. */
static int json_add_untracked_between(struct json_object *o, const frozen_by_result *fb) {
        struct json_object *a;
        int r;

        if (!fb->gap_low)
                return json_object_object_add(o, "untracked_between", NULL) < 0 ? -ENOMEM : 0;
        a = json_object_new_array();
        if (!a)
                return -ENOMEM;
        r = json_append(a, json_object_new_string(fb->gap_low));
        if (r >= 0 && fb->gap_high)
                r = json_append(a, json_object_new_string(fb->gap_high));
        else if (r >= 0 && json_object_array_add(a, NULL) < 0)
                r = -ENOMEM;
        if (r < 0) {
                json_object_put(a);
                return r;
        }
        return json_add(o, "untracked_between", a);
}

/* PATH, a command's argument, as freezerd names the group ("/-dash" for
 * "-dash", "/pods/a" for "pods/a/"), to free: for the start of an error
 * line, whose rest is freezerd's message in its own words, so that the two
 * name the group alike.  NULL if it does not normalize (freezerd refuses it,
 * and the line names it as given) or on a failed allocation. */
static char *path_shown(const char *arg) {
        char *norm = NULL;

        if (!arg || cg_path_normalize(arg, &norm, NULL) < 0)
                return NULL;
        return norm;
}

/* A path longer than CG_QUOTE_MAX bytes as freezerd's messages quote it
 * (cg_quote()): its first CG_QUOTE_HEAD bytes at most, "...", its last
 * CG_QUOTE_TAIL bytes at most, each part cut on a character, then " (N
 * bytes)", so that a 5 kB argument does not make a 5 kB line, and the two
 * parts of one line cut it alike: where, cg_quote_cut() says, freezerd's
 * own code (cgroup-util.c).  Unlike cg_quote() nothing is escaped: the line
 * is, as a whole, as it is written.  *ret: the cut path, to free, or NULL
 * where the path is short enough to be named whole.  Returns 0 or
 * -ENOMEM. */
static int path_cut(const char *path, char **ret) {
        size_t len = strlen(path), head, tail;

        *ret = NULL;
        if (len <= CG_QUOTE_MAX)
                return 0;
        cg_quote_cut(path, len, &head, &tail);
        if (asprintf(ret, "%.*s...%s (%zu bytes)", (int) head, path, path + tail, len) < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}

/* A path as freezectl's messages name it: as it is, but in double quotes
 * where it is empty or a name in it starts or ends with white space, which
 * would otherwise not be seen ("cannot freeze "/a ": ..." for "/a ", where
 * "cannot freeze /a : ..." read as /a; "/ /a" for " /a"), as freezerd's
 * messages do (cg_quote_plain()); and cut where it is long (path_cut()),
 * inside the quotes as freezerd does.  Ordinary paths keep their usual look.
 * The line that says it escapes a '"' inside the quotes as \"
 * (words_escape_n(), which finds it in path_q_slots).  The result lives
 * until the PATH_Q_SLOTS-th next call: enough for the paths of one
 * message.  With list, where it is one of a list (path_q_list()). */
static const char *path_q_as(const char *path, bool list) {
        static unsigned next, next_short;
        static char *short_slots[PATH_Q_SLOTS];
        _cleanup_free_ char *cut = NULL;
        const char *shown = path;
        char *q;

        if (!path)
                return "(null)";
        if (path_cut(path, &cut) < 0)
                return path;
        if (cut)
                shown = cut;
        if (cg_quote_plain(path) && (!list || cg_quote_list_plain(shown))) {
                if (!cut)
                        return path;
                /* Bare, kept apart from path_q_slots: words_escape_n() takes
                 * those for quoted ones. */
                free(short_slots[next_short]);
                short_slots[next_short] = TAKE_PTR(cut);
                q = short_slots[next_short];
                next_short = (next_short + 1) % PATH_Q_SLOTS;
                return q;
        }
        if (asprintf(&q, "\"%s\"", shown) < 0)
                return path;
        free(path_q_slots[next]);
        path_q_slots[next] = q;
        next = (next + 1) % PATH_Q_SLOTS;
        return q;
}

static const char *path_q(const char *path) {
        return path_q_as(path, false);
}

/* A path as path_q() names it, where it is one of a list of paths joined by
 * ", " (freeze --except's note), or followed by ", ..." or ": " (the words
 * of a failed freeze --except): in double quotes also where it holds a '"'
 * or what separates such a list and its sentences (", ", " and ", ": ",
 * ". ", also where its end meets them: cg_quote_list_plain()), so that a
 * group named "/x/a, b" does not read as /x/a and b.  freezerd's messages
 * name such a path so (CG_NAMED_IN_LIST()). */
static const char *path_q_list(const char *path) {
        return path_q_as(path, true);
}

/* A path as a word of a command line freezectl suggests: as it is where
 * every byte of it reads as itself to a shell, else in single quotes, a '
 * in it as '"'"' (not '\'': the line shows a backslash doubled,
 * text_escape_n()).  path_q()'s double quotes are no shell word: a shell
 * expands $, ` and \ in them, and a name with white space inside reads as
 * two words bare.  Where it is not as it is, a copy in *tofree (to free);
 * path, as it is, on a failed allocation: it is only shown.  NULL where the
 * line cannot show the word as a shell reads it: a path that holds a
 * backslash (shown doubled) or a character the line shows as \xNN
 * (char_escaped()); the caller names the path without a command then. */
static const char *shell_word(const char *path, char **tofree) {
        const char *p;
        size_t n = 2;
        char *w, *k;

        *tofree = NULL;
        for (const unsigned char *u = (const unsigned char *) path; *u;) {
                size_t l = cg_utf8_char_len(u, false);

                if (char_escaped(u, l) || *u == '\\')
                        return NULL;
                u += l;
        }
        for (p = path; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      strchr("/._-+,:@%=", *p) || (unsigned char) *p >= 0x80))
                        break;
        if (*path && !*p)
                return path;
        for (p = path; *p; p++)
                n += *p == '\'' ? 5 : 1;
        w = k = malloc(n + 1);
        if (!w)
                return path;
        *k++ = '\'';
        for (p = path; *p; p++)
                if (*p == '\'')
                        k = stpcpy(k, "'\"'\"'");
                else
                        *k++ = *p;
        *k++ = '\'';
        *k = 0;
        return *tofree = w;
}

/* thaw --recursive succeeds when a group stays frozen by an ancestor above
 * PATH (the batch clears the flags it was asked to); say so, naming the
 * ancestor, rather than leave the caller to find the group still frozen. */
static void note_frozen_by(freezer *f, const char *path, const frozen_by_result *fb) {
        /* The groups freezectl did not look at, as they are not tracked. */
        _cleanup_free_ char *gap = untracked_gap(fb, true);
        const char *by = fb->by, *shown = path_q(path);

        if (streq(by, FROZEN_UNTRACKED))
                log_error("note: every freeze flag in %s is cleared, but a group %s still freezes it "
                          "(freezectl does not look it up: that would make freezerd track it)",
                          shown, gap ?: "that freezerd does not track");
        else if (streq(by, FROZEN_ABOVE_ROOT)) {
                _cleanup_free_ char *root = NULL;

                /* freezerd's paths are relative to its root: name it, to
                 * say where to look (freezerd does not say which group
                 * above it is frozen, but its FrozenByParent to a plain
                 * thaw does). */
                (void) freezer_get_cgroup_root(f, &root);
                log_error("note: every freeze flag in %s is cleared, but a group above freezerd's cgroup root%s%s%s "
                          "still freezes it%s%s%s", shown, root ? " (" : "", root ? path_q(root) : "", root ? ")" : "",
                          gap ? " (and so may a group " : "", gap ?: "", gap ? ")" : "");
        } else if (streq(by, "/"))
                log_error("note: every freeze flag %s %s is cleared, but the own flag of freezerd's cgroup root, "
                          "\"/\", still freezes it (freezerd does not write that flag)%s%s%s",
                          streq(path, "/") ? "below" : "in", shown,
                          gap ? ", and so may a group " : "", gap ?: "", gap ? "" : "");
        else
                log_error("note: every freeze flag in %s is cleared, but %s still freezes it%s%s%s", shown,
                          path_q(by),
                          gap ? " (and so may a group " : "", gap ?: "", gap ? ")" : "");
}

/* Whether the last call failed because no freezerd owns its name on the bus. */
static bool freezerd_absent(freezer *f) {
        return streq_ptr(freezer_last_error_name(f), "org.freedesktop.DBus.Error.ServiceUnknown") ||
               streq_ptr(freezer_last_error_name(f), "org.freedesktop.DBus.Error.NameHasNoOwner");
}

/* Whether the last call's failure was the connection's, not the call's:
 * freezerd not on the bus, gone, not answering, or a bus' socket given as
 * its private one (the bus daemon answers, or closes the connection).  A
 * call after it would only fail again, and be said instead of it. */
static bool connection_failed(freezer *f) {
        const char *name = freezer_last_error_name(f);

        return freezerd_absent(f) || streq_ptr(name, "org.freedesktop.DBus.Error.Disconnected") ||
               streq_ptr(name, "org.freedesktop.DBus.Error.NoReply") ||
               streq_ptr(name, "org.freedesktop.DBus.Error.Timeout") ||
               (arg_bus == BUS_PRIVATE &&
                (streq_ptr(name, "org.freedesktop.DBus.Error.UnknownMethod") ||
                 streq_ptr(name, "org.freedesktop.DBus.Error.UnknownInterface") ||
                 streq_ptr(name, "org.freedesktop.DBus.Error.UnknownObject")));
}

/* Before a read-only command (status, tree, pressure, watch) looks PATH up
 * with an older freezerd, without LookupGroup (lookup_group()): whether its
 * GetGroup makes freezerd track PATH's subtree, as freezerd does for any call
 * naming a group outside the tracked subtrees, and keep it across its
 * restarts (tracked.json).  Looking at a group should not change for good
 * what freezerd follows unsaid: note_tracked() says it, once the lookup
 * succeeded.  From a listing (tracked groups and "/"): PATH is tracked
 * already where it or an ancestor below "/" is listed: *ret false.
 * A listing that fails for the connection (freezerd not there, a bus' socket
 * given as its private one, which closes the connection) is returned, for
 * the caller to say as the lookup's own.  Any other failure (a bus policy
 * that denies ListGroups but not Get, no memory, a list too large) only
 * leaves it unknown: *ret false, 0, and the lookup goes on (the status of a
 * group does not depend on that note).  For a path that does not normalize,
 * false and 0: the lookup says what is wrong with it.
 * freezerd publishes no list of its track roots, so where it tracks "/" a
 * group made a moment ago right below "/", before freezerd read its mkdir,
 * gets the note though the lookup only adds it to that subtree. */
static int lookup_tracks(freezer *f, const char *path, bool *ret) {
        _cleanup_free_ char *up = NULL;
        freezer_group *groups = NULL;
        size_t n = 0;
        bool tracks = true;
        int r;

        *ret = false;
        if (!path || cg_path_normalize(path, &up, NULL) < 0 || streq(up, "/"))
                return 0;
        r = freezer_list(f, &groups, &n);
        if (r < 0)
                return connection_failed(f) ? r : 0;
        if (n > 0)
                qsort(groups, n, sizeof(groups[0]), group_cmp);
        for (char *slash; tracks && !streq(up, "/");) {
                if (listed_group(groups, n, up))
                        tracks = false;
                slash = strrchr(up, '/');
                if (slash == up)
                        slash[1] = 0;
                else
                        *slash = 0;
        }
        freezer_group_array_free(groups, n);
        *ret = tracks;
        return 0;
}

/* What lookup_tracks() foresaw, said once the lookup of path succeeded. */
static void note_tracked(const char *path) {
        _cleanup_free_ char *shown = path_shown(path), *word_tofree = NULL;
        const char *word = shell_word(shown ?: path, &word_tofree);

        log_error("note: freezerd now tracks %s and the groups below it, also after it restarts (a group outside "
                  "the tracked subtrees is tracked when a command looks it up): %s%s ends that",
                  path_q(shown ?: path), word ? PROGRAM " untrack " : "an untrack of it", word ?: "");
}

/* Whether the lookup that just failed on f was LookupGroup refused by a
 * freezerd that lacks it (UnknownMethod): an older one, whose GetGroup
 * tracks a group outside the tracked subtrees for good, with
 * lookup_tracks()'s note.  The read-only commands look groups up with
 * FREEZER_LOOKUP_TRANSIENT: a look changes nothing for good. */
static bool lookup_transient_unknown(freezer *f) {
        return streq_ptr(freezer_last_error_name(f), "org.freedesktop.DBus.Error.UnknownMethod");
}

/* The lookup of a read-only command (status, tree, pressure, watch): PATH's
 * group into *ret (its Id into *ret_id, if not NULL), held by freezerd only
 * while this command runs (FREEZER_LOOKUP_TRANSIENT).  With a freezerd
 * before LookupGroup: GetGroup, *ret_tracks saying whether that made
 * freezerd track PATH for good (note_tracked()'s, lookup_tracks()). */
static int lookup_group(freezer *f, const char *path, freezer_group *ret, uint64_t *ret_id, bool *ret_tracks) {
        int r;

        *ret_tracks = false;
        r = freezer_lookup_group(f, path, FREEZER_LOOKUP_TRANSIENT, ret, ret_id);
        if (r >= 0 || !lookup_transient_unknown(f))
                return r;
        r = lookup_tracks(f, path, ret_tracks);
        if (r < 0)
                return r;
        return freezer_lookup_group(f, path, 0, ret, ret_id);
}

/* What carries freeze and thaw: libfreezer, or over the private socket the
 * wire (bus-wire.h), which spares loading libsystemd. */
typedef struct caller {
        freezer *f;
        wire *w;
        /* The wire is root's default private socket, where a connection that
         * freezerd did not let in may go to the system bus instead
         * (caller_may_retry_on_bus()). */
        bool bus_fallback;
} caller;

/* What a verb returns when its first call found root's default private
 * socket closed before freezerd let us in (at its limit of connections, it
 * closes a new one at once): nothing was done and nothing said, and the verb
 * runs again on the system bus, as connect_bus() falls back to it. */
#define EXIT_RETRY_ON_BUS (-2)

static bool caller_may_retry_on_bus(const caller *c, int r) {
        return c->w && c->bus_fallback && r == -ECONNRESET && !wire_authenticated(c->w);
}

static int caller_freeze_thaw(caller *c, bool freeze, const char *path, uint64_t flags) {
        if (!c->w)
                return freeze ? freezer_freeze(c->f, path, arg_timeout_usec, flags)
                              : freezer_thaw(c->f, path, arg_timeout_usec, flags);
        return wire_call(c->w, FREEZER_MANAGER_PATH, FREEZER_MANAGER_INTERFACE, freeze ? "Freeze" : "Thaw",
                         (const wire_arg[]) {WIRE_STRING(path), WIRE_U64(arg_timeout_usec), WIRE_U64(flags)}, 3,
                         wait_call_timeout_usec(arg_timeout_usec, flags & FREEZER_NO_WAIT), NULL, 0);
}

/* After a waiting thaw of norm (the path normalized, as freezerd names the
 * group): how many groups below it the kernel reports frozen (its
 * FrozenDescendants), in *ret; negative if that cannot be read (nothing is
 * said then).  One Get (GetAll by libfreezer) on the group's object. */
static int caller_frozen_below(caller *c, const char *norm, uint32_t *ret) {
        _cleanup_free_ char *object = NULL;
        freezer_group g;
        int r;

        *ret = 0;
        if (!norm)
                return -EINVAL;
        if (c->w) {
                r = wire_path_encode(FREEZER_GROUP_PREFIX, norm, &object);
                if (r < 0)
                        return r;
                return wire_get_u32_property(c->w, object, FREEZER_GROUP_INTERFACE, "FrozenDescendants",
                                             wait_call_timeout_usec(arg_timeout_usec, false), ret);
        }
        r = freezer_get_group(c->f, norm, &g);
        if (r < 0)
                return r;
        *ret = g.frozen_descendants;
        freezer_group_clear(&g);
        return 0;
}

/* frozen_by() for a thaw that FrozenByParent answered.  The wire has no
 * ListGroups: by the wire, a libfreezer handle to where the wire went (the
 * private socket it reached, else the bus) looks the groups up, for this
 * alone.  Nothing is said if it cannot connect: ret is left empty, as
 * frozen_by() leaves it when a look-up fails. */
static void caller_frozen_by(caller *c, const char *path, frozen_by_result *ret) {
        freezer *f = NULL;
        int r;

        *ret = (frozen_by_result) {};
        if (c->f) {
                frozen_by(c->f, path, ret);
                return;
        }
        if (connected_private)
                r = freezer_open_private(&f, arg_bus == BUS_PRIVATE ? arg_socket : NULL);
        else if (arg_bus == BUS_ADDRESS)
                r = freezer_open_address(&f, arg_address);
        else if (arg_bus == BUS_USER)
                r = freezer_open_user(&f);
        else
                r = freezer_open_system(&f);
        if (r < 0)
                return;
        frozen_by(f, path, ret);
        freezer_close(f);
}

static int caller_apply_batch(caller *c, const freezer_request *requests, size_t n, uint64_t flags,
                              uint32_t *ret_writes, uint32_t *ret_skipped) {
        uint32_t reply[2] = {};
        int r;

        if (!c->w)
                return freezer_apply_batch(c->f, requests, n, arg_order, arg_timeout_usec, flags, ret_writes,
                                           ret_skipped);
        r = wire_call(c->w, FREEZER_MANAGER_PATH, FREEZER_MANAGER_INTERFACE, "ApplyBatch",
                      (const wire_arg[]) {WIRE_REQUESTS(requests, n), WIRE_STRING(order_to_string(arg_order)),
                                          WIRE_U64(arg_timeout_usec), WIRE_U64(flags)}, 4,
                      wait_call_timeout_usec(arg_timeout_usec, flags & FREEZER_NO_WAIT), reply, 2);
        *ret_writes = reply[0];
        *ret_skipped = reply[1];
        return r;
}

static const char *caller_error_name(const caller *c) {
        return c->w ? wire_last_error_name(c->w) : freezer_last_error_name(c->f);
}

static const char *caller_error_message(const caller *c) {
        return c->w ? wire_last_error_message(c->w) : freezer_last_error_message(c->f);
}

static void log_hello_refused(const char *name, const char *message);
static void log_connect_failure(int r);

/* Whether the wire's failed call r was the connection's failure, before it
 * was up (as libfreezer's freezer_open_*() fail, before any call): the bus
 * refused our Hello, our authentication was refused, the server closed the
 * connection before it let us in (freezerd at its limit of connections, also
 * while the call was written), or the bus closed it before it answered Hello.
 * Nothing of the call was done, and it is said as "cannot connect", as by
 * libfreezer's commands. */
static bool caller_not_connected(const caller *c, int r) {
        return c->w && (r == -EPROTO || r == -EPERM ||
                        (r == -ECONNRESET && (!wire_authenticated(c->w) || wire_bus_refused(c->w))));
}

_printf_(3, 4)
static void log_caller_failure(const caller *c, int r, const char *fmt, ...) {
        va_list ap;

        if (c->w && r == -EPROTO) { /* the bus refused our Hello, and the call got no answer */
                log_hello_refused(caller_error_name(c), caller_error_message(c));
                return;
        }
        if (c->w && r == -ECONNRESET && !wire_authenticated(c->w)) {
                /* Closed before the server let us in, whether or not the call
                 * was still being written: as libfreezer's commands say it
                 * (it read "closed the connection while the call was written"
                 * or "freezerd stopped or crashed during the freeze"). */
                log_connect_failure(r);
                return;
        }
        if (c->w && ((r == -ETIMEDOUT && wire_call_unsent(c->w)) || (r == -ECONNRESET && wire_call_cut(c->w)))) {
                /* The call never reached freezerd whole: not "freezerd goes on
                 * with it", nor "does the bus let us in" (a bus that does
                 * drops a call larger than its max_message_size before it
                 * answers Hello). */
                _cleanup_free_ char *what = NULL;
                const char *peer = arg_bus == BUS_PRIVATE ? "freezerd" : "the bus";

                va_start(ap, fmt);
                if (vasprintf(&what, fmt, ap) < 0)
                        what = NULL;
                va_end(ap);
                if (r == -ETIMEDOUT)
                        log_error("%s: %s took nothing of the call within its timeout (is freezerd stopped?): the "
                                  "call was not sent whole, and nothing of it was done",
                                  what ?: "cannot call freezerd", peer);
                else
                        log_error("%s: %s closed the connection while the call was written%s: it never got the "
                                  "call whole, and nothing of it was done",
                                  what ?: "cannot call freezerd", peer,
                                  arg_bus == BUS_PRIVATE ? ""
                                                         : " (is it larger than the bus takes, its max_message_size? "
                                                           "or does the bus not let this uid in?)");
                return;
        }
        if (c->w && r == -EPERM) {
                /* Our authentication refused, or the server not the one the
                 * address' guid= names: the connection never was up, as
                 * libfreezer's open says it (-EACCES).  It read "cannot freeze
                 * /a: AccessDenied: Operation not permitted", as if freezerd
                 * had refused the freeze. */
                log_connect_failure(-EACCES);
                return;
        }
        if (c->w && r == -ECONNRESET && wire_bus_refused(c->w)) {
                /* Closed before Hello was answered: the connection never was
                 * up, as sd-bus's commands say it. */
                log_connect_failure(r);
                return;
        }
        va_start(ap, fmt);
        vlog_failure(caller_error_name(c), caller_error_message(c), r, fmt, ap);
        va_end(ap);
}

/* ---- freezectl's own group ----
 *
 * A freeze that covers the group freezectl runs in freezes freezectl too,
 * while it waits for the reply: it never reads it, and hangs (SIGTERM
 * pending) until that group is thawed from elsewhere.  freezerd refuses to
 * freeze its own group, but does not know its caller's.  So a freeze that
 * waits is refused here first, before anything is written; --no-wait (whose
 * reply comes before the kernel freezes anything) goes as asked. */

/* freezectl's own cgroup, from the "0::" line of /proc/self/cgroup: relative
 * to the root of its cgroup namespace ("/user.slice/.../session-2.scope"),
 * to free; NULL if unknown. */
static char *own_cgroup(void) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int fd, r;

        fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return NULL;
        r = read_full_fd(fd, 1024 * 1024, &text, &len);
        close(fd);
        if (r < 0)
                return NULL;
        for (const char *line = text, *nl; *line; line = nl ? nl + 1 : line + strlen(line)) {
                nl = strchr(line, '\n');
                if (startswith(line, "0::/"))
                        return strndup(line + 3, strcspn(line + 3, "\n"));
        }
        return NULL;
}

/* Whether the group path (normalized, relative to freezerd's root) may hold
 * own (own_cgroup()) by the names alone: path appears in own at a component
 * boundary, followed by its end or a '/'.  Only then is freezerd asked where
 * its root is, so that a plain freeze costs no round trip more. */
static bool own_may_be_below(const char *own, const char *path) {
        size_t l = strlen(path);

        if (streq(path, "/"))
                return true;
        for (const char *p = own; (p = strstr(p, path)); p++)
                if (p[l] == 0 || p[l] == '/')
                        return true;
        return false;
}

/* Whether the cgroup directory dir lists this process in its cgroup.procs:
 * that dir is indeed freezectl's own cgroup, whatever the mount's root and
 * the cgroup namespace. */
static bool dir_holds_self(const char *dir) {
        _cleanup_free_ char *file = NULL, *text = NULL;
        size_t len = 0;
        int fd, r;

        if (asprintf(&file, "%s/cgroup.procs", dir) < 0)
                return false;
        fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return false;
        r = read_full_fd(fd, 64 * 1024 * 1024, &text, &len);
        close(fd);
        if (r < 0)
                return false;
        for (char *p = text, *end; *p; p = end) {
                unsigned long pid = strtoul(p, &end, 10);

                if (end == p)
                        break;
                if (pid == (unsigned long) getpid())
                        return true;
        }
        return false;
}

/* own (own_cgroup()) as freezerd names the group, relative to its cgroup
 * root, root (its CgroupRoot: a directory in the cgroup2 mount), to free:
 * "/" for the root itself; NULL if it lies outside the root, or is unknown
 * (no mount here holds root, as for a freezerd in another mount namespace). */
static char *own_group_below(const char *own, const char *root) {
        _cleanup_free_ char *mounts = cgroup_mounts(), *dir = NULL;
        const char *mount = NULL, *rel;
        struct stat st;
        size_t n;

        if (!mounts)
                return NULL;
        for (const char *m = mounts; *m; m += strlen(m) + 1)
                if (path_under(root, m) && (!mount || strlen(m) > strlen(mount)))
                        mount = m;
        if (!mount)
                return NULL;
        /* Only a mount of the hierarchy's root (kernfs gives it inode 1): one
         * made in a cgroup namespace shows that namespace's root, and its
         * paths are not freezerd's. */
        if (stat(mount, &st) < 0 || st.st_ino != 1)
                return NULL;
        n = strlen(mount);
        while (n > 0 && mount[n - 1] == '/')
                n--;
        if (asprintf(&dir, "%.*s%s", (int) n, mount, streq(own, "/") ? "" : own) < 0 || !dir_holds_self(dir))
                return NULL;
        if (!path_under(dir, root))
                return NULL;
        n = strlen(root);
        while (n > 0 && root[n - 1] == '/')
                n--;
        rel = dir + n;
        return strdup(*rel ? rel : "/");
}

/* The look-up, once for the command. */
typedef struct self_check {
        char *own;       /* own_cgroup(), NULL: unknown, nothing is refused */
        bool looked_up;
        char *group;     /* own_group_below(), NULL: nothing freezerd freezes holds it */
} self_check;

static void self_check_clear(self_check *s) {
        free(s->own);
        free(s->group);
}

/* freezectl's own group if the group path (normalized) may hold it, else
 * NULL (in *ret); freezerd's CgroupRoot is asked the first time only.  0,
 * or EXIT_RETRY_ON_BUS where that first call found root's default private
 * socket closed before freezerd let us in. */
static int self_group_for(caller *c, self_check *s, const char *path, const char **ret) {
        _cleanup_free_ char *root = NULL;
        int r;

        *ret = NULL;
        if (!s->own || !own_may_be_below(s->own, path))
                return 0;
        if (!s->looked_up) {
                r = c->w ? wire_get_string_property(c->w, FREEZER_MANAGER_PATH, FREEZER_MANAGER_INTERFACE,
                                                    "CgroupRoot", wait_call_timeout_usec(arg_timeout_usec, false),
                                                    &root)
                         : freezer_get_cgroup_root(c->f, &root);
                if (r < 0 && caller_may_retry_on_bus(c, r))
                        return EXIT_RETRY_ON_BUS;
                /* Otherwise, unknown: the call goes as asked, and says
                 * what is wrong (no freezerd there, say). */
                s->looked_up = true;
                if (r >= 0 && root)
                        s->group = own_group_below(s->own, root);
        }
        *ret = s->group;
        return 0;
}

/* Whether freezing the group path on its own flag (recursive: and every
 * group below it, as --recursive does) freezes self, freezectl's own group
 * (both relative to freezerd's root).  "/" is no group that freezerd freezes,
 * but with --recursive it stands for every tracked group below it:
 * whether self's branch is tracked is not asked (that list may be long),
 * any group below the root counts. */
static bool freeze_covers(const char *path, bool recursive, const char *self) {
        if (streq(path, "/"))
                return recursive && !streq(self, "/");
        return path_under(self, path);
}

/* The group that freeze top --except=... freezes on its own flag and that
 * holds self (to free), NULL if none: self runs in an excluded subtree, or in
 * top itself or a group between top and an excluded group (those stay
 * running).  The cover is, at each level, the siblings of an excluded branch. */
static char *except_cover(const char *top, const char *self) {
        size_t at;

        if (streq(self, "/") || (!streq(top, "/") && !path_under(self, top)) || streq(self, top))
                return NULL;
        for (size_t i = 0; i < n_arg_except; i++)
                if (arg_except_norm[i] && path_under(self, arg_except_norm[i]))
                        return NULL;
        at = streq(top, "/") ? 0 : strlen(top);
        while (self[at]) {
                bool between = false;
                char *g;

                at += 1 + strcspn(self + at + 1, "/"); /* the next component of self */
                g = strndup(self, at);
                if (!g)
                        return NULL;
                for (size_t i = 0; i < n_arg_except && !between; i++)
                        between = arg_except_norm[i] && path_under(arg_except_norm[i], g);
                if (!between)
                        return g;
                free(g);
        }
        return NULL;
}

/* The refusal, in one line: what was asked, the group it would freeze that
 * holds self (a path, or words such as "a group below /"), and self
 * (freezectl's own group); the paths as freezectl's words name them
 * (path_q()). */
static void log_self_refusal(const char *what, const char *group, const char *self) {
        log_error("%s: %s contains freezectl itself (%s): frozen with it, freezectl would not read the reply "
                  "until that group is thawed from elsewhere; run it from a group the freeze leaves running, or "
                  "give --no-wait to freeze it all the same (freezectl freezes too, and exits once thawed)",
                  what, group[0] == '/' ? path_q(group) : group, path_q(self));
}

/* freeze PATH... (with --recursive, their subtrees): EXIT_FAILURE, said, if
 * any freezes freezectl's own group, before anything is sent but
 * freezerd's CgroupRoot; EXIT_RETRY_ON_BUS (self_group_for()); else
 * EXIT_SUCCESS. */
static int check_self_freeze(caller *c, char **paths, size_t n_paths) {
        _cleanup_(self_check_clear) self_check s = {.own = own_cgroup()};

        for (size_t i = 0; i < n_paths && s.own; i++) {
                _cleanup_free_ char *norm = path_shown(paths[i]);
                const char *self;
                int r;

                if (!norm || (streq(norm, "/") && !arg_recursive)) /* refused by freezerd */
                        continue;
                r = self_group_for(c, &s, norm, &self);
                if (r != 0)
                        return r;
                if (self && freeze_covers(norm, arg_recursive, self)) {
                        _cleanup_free_ char *what = NULL;

                        if (asprintf(&what, "cannot freeze %s%s", path_q(norm), arg_recursive ? " --recursive" : "") < 0)
                                what = NULL;
                        log_self_refusal(what ?: "cannot freeze", streq(norm, "/") ? "a group below /" : norm, self);
                        return EXIT_FAILURE;
                }
        }
        return EXIT_SUCCESS;
}

/* The same for freeze PATH --except=...: the groups it freezes on their own
 * flags are the cover of PATH's subtree minus the excluded ones. */
static int check_self_freeze_except(caller *c, const char *arg) {
        _cleanup_(self_check_clear) self_check s = {.own = own_cgroup()};
        _cleanup_free_ char *top = path_shown(arg), *cover = NULL;
        const char *self;
        int r;

        if (!s.own || !top)
                return EXIT_SUCCESS;
        r = self_group_for(c, &s, top, &self);
        if (r != 0)
                return r;
        if (self && (cover = except_cover(top, self))) {
                _cleanup_free_ char *what = NULL;

                if (asprintf(&what, "cannot freeze %s except %s%s", path_q(top),
                             path_q_list(arg_except_norm[0] ?: arg_except[0]), n_arg_except > 1 ? ", ..." : "") < 0)
                        what = NULL;
                log_self_refusal(what ?: "cannot freeze", cover, self);
                return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}

/* The same for a batch's requests to freeze: each that counts (no later
 * request names its group). */
static int check_self_batch(caller *c, const char *file, const freezer_request *requests, size_t n) {
        _cleanup_(self_check_clear) self_check s = {.own = own_cgroup()};

        for (size_t i = 0; i < n && s.own; i++) {
                _cleanup_free_ char *norm = NULL;
                const char *self;
                bool later = false;
                int r;

                if (!requests[i].freeze || !(norm = path_shown(requests[i].path)) ||
                    (streq(norm, "/") && !arg_recursive))
                        continue;
                r = self_group_for(c, &s, norm, &self);
                if (r != 0)
                        return r;
                if (!self || !freeze_covers(norm, arg_recursive, self))
                        continue;
                /* The highest group of request i that holds self: norm, or
                 * for "/" self's group below the root. */
                _cleanup_free_ char *held = streq(norm, "/") ? strndup(self, 1 + strcspn(self + 1, "/"))
                                                             : strdup(norm);
                for (size_t j = i + 1; j < n && !later && held; j++) {
                        _cleanup_free_ char *other = path_shown(requests[j].path);

                        /* With --recursive the later request that holds a
                         * group wins it: one whose subtree holds norm holds
                         * every group of norm's that holds self. */
                        later = other && (streq(other, norm) ||
                                          (arg_recursive && (streq(other, "/") || path_under(held, other))));
                }
                if (!later) {
                        _cleanup_free_ char *what = NULL;

                        if (asprintf(&what, "cannot apply the batch from %s (request %zu freezes %s)",
                                     streq(file, "-") ? "standard input" : file, i, path_q(norm)) < 0)
                                what = NULL;
                        log_self_refusal(what ?: "cannot apply the batch",
                                         streq(norm, "/") ? "a group below /" : norm, self);
                        return EXIT_FAILURE;
                }
        }
        return EXIT_SUCCESS;
}

/* The --json object of one path of freeze, thaw, track or untrack, appended
 * to results: {"path", "result": "done"} (with "frozen_by" and
 * "untracked_between" if by names what freezes it), or "failed" with "error"
 * and "message" as far as known. */
static int json_append_result(struct json_object *results, const char *path, bool failed, const char *name,
                              const char *message, const frozen_by_result *by, uint32_t frozen_below) {
        _cleanup_free_ char *norm = NULL;
        struct json_object *o;

        /* As freezerd names the group, and list and watch print it ("/pods/a"
         * for "pods/a/"), so that the outputs can be matched; a path that
         * does not normalize (freezerd refused it) as given. */
        if (cg_path_normalize(path, &norm, NULL) >= 0)
                path = norm;

        o = json_object_new_object();
        if (!o ||
            json_add(o, "path", json_string_of_arg(path)) < 0 ||
            json_add(o, "result", json_object_new_string(failed ? "failed" : "done")) < 0 ||
            (by && by->by && json_add(o, "frozen_by", json_object_new_string(by->by)) < 0) ||
            (by && by->by && json_add_untracked_between(o, by) < 0) ||
            (frozen_below > 0 && json_add(o, "frozen_below", json_object_new_int64(frozen_below)) < 0) ||
            (failed && name && json_add(o, "error", json_object_new_string(name)) < 0) ||
            (failed && message && json_add(o, "message", json_object_new_string(message)) < 0) ||
            json_append(results, TAKE_PTR(o)) < 0) {
                json_object_put(o);
                return -ENOMEM;
        }
        return 0;
}

static int verb_freeze_thaw(caller *c, bool freeze, char **paths, size_t n_paths) {
        struct json_object *results = NULL;
        uint64_t flags = request_flags();
        bool still_frozen = false;
        int ret = 0, r;

        if (freeze && !arg_no_wait) {
                ret = check_self_freeze(c, paths, n_paths);
                if (ret != EXIT_SUCCESS)
                        return ret;
        }

        if (arg_json) {
                results = json_object_new_array();
                if (!results) {
                        log_oom();
                        return EXIT_FAILURE;
                }
        }

        for (size_t i = 0; i < n_paths; i++) {
                _cleanup_(frozen_by_result_clear) frozen_by_result by = {};
                _cleanup_free_ char *shown = path_shown(paths[i]);
                uint32_t frozen_below = 0;
                bool by_parent = false;

                interrupt_say("the %s of %s", freeze ? "freeze" : "thaw", path_q(shown ?: paths[i]));
                call_path = paths[i];
                r = caller_freeze_thaw(c, freeze, paths[i], flags);
                interrupt_done();
                if (r < 0 && i == 0 && caller_may_retry_on_bus(c, r)) {
                        if (results) /* (json-c is not loaded without --json) */
                                json_object_put(results);
                        return EXIT_RETRY_ON_BUS;
                }
                if (r < 0) {
                        log_caller_failure(c, r, "cannot %s %s", freeze ? "freeze" : "thaw", path_q(shown ?: paths[i]));
                        /* Read once: the look-up below makes calls of its
                         * own, which replace the last error. */
                        by_parent = !freeze && streq_ptr(caller_error_name(c), FROZEN_BY_PARENT_ERROR);
                        if (by_parent) {
                                still_frozen = true; /* its flag is cleared */
                                /* Done as far as PATH's flag goes, as a thaw
                                 * --recursive that an ancestor leaves frozen
                                 * is: its --json object says it alike,
                                 * "done" and what freezes it ("frozen_by"),
                                 * by the same walk, not "failed". */
                                if (results)
                                        caller_frozen_by(c, paths[i], &by);
                        } else
                                ret = EXIT_FAILURE;
                        /* No connection, no path handled: nothing on standard
                         * output, as where libfreezer cannot connect (a
                         * "failed" object said it for the first path alone,
                         * and over the wire only). */
                        if (results && i == 0 && !by_parent && caller_not_connected(c, r)) {
                                json_object_put(results);
                                results = NULL;
                        }
                } else if (!freeze && arg_recursive && c->f) {
                        frozen_by(c->f, paths[i], &by);
                        if (by.by) {
                                note_frozen_by(c->f, shown ?: paths[i], &by);
                                still_frozen = true;
                        }
                } else if (!freeze && !arg_recursive && !arg_no_wait &&
                           caller_frozen_below(c, shown, &frozen_below) >= 0 && frozen_below > 0) {
                        /* The thaw cleared PATH's flag alone, and its reply
                         * came once the kernel reported PATH running: by
                         * then a group below that PATH alone froze runs too
                         * (the kernel thaws the subtree in the same write),
                         * so what is still frozen is frozen by a flag below
                         * PATH (freeze --except sets such flags), which the
                         * exit status 0 would hide.  PATH in the command as
                         * a shell word, whole (path_q() cuts a long one);
                         * none where the line cannot show one (shell_word()). */
                        _cleanup_free_ char *word_tofree = NULL;
                        const char *word = shell_word(shown ?: paths[i], &word_tofree);

                        log_error("note: %" PRIu32 " group%s below %s stay%s frozen by flags set below it (a plain "
                                  "thaw clears its own flag only): %s%s clears them",
                                  frozen_below, frozen_below == 1 ? "" : "s", path_q(shown ?: paths[i]),
                                  frozen_below == 1 ? "s" : "",
                                  word ? PROGRAM " thaw --recursive " : "a thaw --recursive of it", word ?: "");
                }

                if (results && json_append_result(results, paths[i], r < 0 && !by_parent, caller_error_name(c),
                                                  caller_error_message(c), &by, frozen_below) < 0) {
                        log_oom();
                        ret = EXIT_FAILURE;
                        break;
                }

                /* A thaw that FrozenByParent answered cleared the group's
                 * flag (of "/", there was none to clear): it is done as far
                 * as that path goes, and the paths after it are thawed as
                 * asked, the exit status still 1.  Any other failure ends
                 * the command. */
                if (r < 0 && !by_parent)
                        break;
        }

        if (results && print_json_and_put(results) != EXIT_SUCCESS)
                ret = EXIT_FAILURE;

        /* A failure says more: the paths after it were left alone. */
        if (ret == EXIT_SUCCESS && still_frozen)
                ret = EXIT_STILL_FROZEN;
        return ret;
}

/* ---- freeze --except ---- */

/* An --except= path that is not below PATH: freezerd refuses it
 * (InvalidArgs, which read as a failure, exit 1), but the arguments alone
 * tell, so it is a usage error, said before anything is sent.  As freezerd
 * compares them: normalized (a group's path is its name), so "/pods/" is
 * "/pods".  A path that does not normalize is left to freezerd, which says
 * what is wrong with it; so is a file system path into a cgroup2 mount, whose
 * NoSuchGroup gets the hint that paths are relative to freezerd's root. */
static int check_except_below(const char *path) {
        _cleanup_free_ char *top = NULL, *mounts = NULL;

        if (cg_path_normalize(path, &top, NULL) < 0)
                return EXIT_SUCCESS;
        mounts = cgroup_mounts();
        if (!mounts || mount_of(path, mounts))
                return EXIT_SUCCESS;

        for (size_t i = 0; i < n_arg_except; i++) {
                const char *x = arg_except_norm[i];

                if (mount_of(arg_except[i], mounts) || !x)
                        continue;
                /* (path_under() takes no "/", below which every other path is.) */
                if (streq(x, top) || (!streq(top, "/") && !path_under(x, top))) {
                        usage_error("--except=%s is not below %s, the PATH to freeze: the excluded subtrees must "
                                    "lie within it", path_q(arg_except[i]), path_q(path));
                        return EXIT_USAGE;
                }
        }
        return EXIT_SUCCESS;
}

static int str_ptr_cmp(const void *a, const void *b) {
        const char *const *x = a, *const *y = b;

        return strcmp(*x, *y);
}

/* How many groups a note names, at most, before "and N more". */
#define NOTE_NAMES_MAX 4

/* freeze --except leaves the excluded subtrees as they are: the excluded
 * group itself must run (freezerd refuses one frozen already), but a group
 * below it frozen by its own flag (a paused container) stays frozen, as a
 * thaw of the excluded group would leave it.  Said, naming them, so that the
 * caller does not take the whole subtree for running.  Looked up after the
 * call, in freezerd's groups (the subtrees are tracked: the call made them
 * so); a failed look-up is left unsaid. */
static void note_frozen_in_excluded(freezer *f) {
        freezer_group *groups = NULL;
        size_t n = 0;

        if (freezer_list(f, &groups, &n) < 0)
                return;
        if (n > 1)
                qsort(groups, n, sizeof(groups[0]), group_cmp);
        for (size_t i = 0; i < n_arg_except; i++) {
                _cleanup_free_ char *names = NULL;
                const char *x = arg_except_norm[i];
                size_t k = 0, len = 0;
                FILE *m;

                if (!x)
                        continue;
                m = open_memstream(&names, &len);
                if (!m)
                        break;
                for (size_t j = 0; j < n; j++) {
                        if (streq(groups[j].path, x) || !path_under(groups[j].path, x) ||
                            (groups[j].state != FREEZER_STATE_FROZEN && groups[j].state != FREEZER_STATE_FREEZING))
                                continue;
                        if (k < NOTE_NAMES_MAX)
                                fprintf(m, "%s%s", k > 0 ? ", " : "", path_q_list(groups[j].path));
                        k++;
                }
                if (k > NOTE_NAMES_MAX)
                        fprintf(m, " and %zu more", k - NOTE_NAMES_MAX);
                if (fclose(m) != 0 || !names)
                        break;
                if (k > 0)
                        log_error("note: %s, below the excluded %s, %s frozen by %s own flag%s: --except leaves "
                                  "the excluded subtrees as they are (thaw %s to run %s)",
                                  names, path_q_list(x), k == 1 ? "stays" : "stay", k == 1 ? "its" : "their",
                                  k == 1 ? "" : "s",
                                  k == 1 ? "it" : "them", k == 1 ? "it" : "them");
        }
        freezer_group_array_free(groups, n);
}

/* Whether a group strictly between top and an excluded group (--except=)
 * lies in no excluded subtree: with nothing frozen, its tasks keep running
 * too.  /p --except=/p/a --except=/p/a/x has none (/p/a is excluded itself);
 * /p --except=/p/b/x has /p/b. */
static bool running_between(const char *top) {
        char *const *norm = arg_except_norm;
        size_t n = n_arg_except;
        bool between = false;

        for (size_t i = 0; i < n && !between; i++) {
                _cleanup_free_ char *g = norm[i] ? strdup(norm[i]) : NULL;
                char *slash;

                /* Each ancestor of the excluded group, up to top (not
                 * included). */
                while (g && !between && (slash = strrchr(g, '/')) && slash != g) {
                        bool covered = false;

                        *slash = 0;
                        if (streq(g, top) || (!streq(top, "/") && !path_under(g, top)))
                                break;
                        for (size_t j = 0; j < n && !covered; j++)
                                covered = norm[j] && path_under(g, norm[j]);
                        between = !covered;
                }
        }
        return between;
}

/* Whether a Timeout's message (freeze --except, without --rollback) names
 * every group whose flag stays set: 1; 0 where it leaves some out ("and N
 * more", after the last of them); -1 where it names none (a freezerd
 * before it did, or no flag set by this call). */
static int timeout_names_stays(const char *message) {
        bool cut;

        if (!message || !stays_find(message, TIMEOUT_STAYS_SENTENCE, &cut))
                return -1;
        return cut ? 0 : 1;
}

static int verb_freeze_except(freezer *f, const char *arg) {
        _cleanup_free_ char *shown = path_shown(arg), *word_tofree = NULL;
        const char *path = shown ?: arg, *x = arg_except_norm[0] ?: arg_except[0];
        char **frozen = NULL;
        size_t n;
        int ret = EXIT_SUCCESS, r;

        if (!arg_no_wait) {
                ret = check_self_freeze_except(&(caller) {.f = f}, arg);
                if (ret != EXIT_SUCCESS)
                        return ret;
        }

        interrupt_say("the freeze of %s except %s%s", path_q(path), path_q_list(x), n_arg_except > 1 ? ", ..." : "");
        r = freezer_freeze_except(f, arg, (const char *const *) arg_except, n_arg_except,
                                  arg_timeout_usec, request_flags(), &frozen);
        interrupt_done();
        if (r < 0) {
                const char *name = freezer_last_error_name(f);

                log_failure(f, r, "cannot freeze %s except %s%s", path_q(path), path_q_list(x),
                            n_arg_except > 1 ? ", ..." : "");
                /* The groups it froze are printed on success only: said where
                 * they are (freezerd's Timeout says that the flags stay), since
                 * the recipe of --help (batch of what was printed) cannot undo
                 * this one.  With advice the caller may
                 * follow: freezerd lets a user other than root write only
                 * flags it owns, and the top of a recursive thaw must be one
                 * of them even where its flag does not change (README, "Who
                 * may do what"), while this call checked only the groups it
                 * froze: a delegated subtree's top, whose flag is root's, is
                 * refused. */
                int named = !arg_rollback && name && streq(name, "org.freezerd.Freezer1.Error.Timeout")
                                    ? timeout_names_stays(freezer_last_error_message(f))
                                    : 1;
                /* PATH in the commands as a shell word, in the words as the
                 * other messages name it; no command where the line cannot
                 * show PATH as a shell word (shell_word()). */
                const char *word = named <= 0 ? shell_word(path, &word_tofree) : NULL;

                if (named <= 0 && word && geteuid() == 0)
                        log_error("note: the groups whose flags stay set (without --rollback) are not %s: '" PROGRAM
                                  " tree %s' shows them ('" PROGRAM " thaw --recursive %s' clears every flag below "
                                  "it, also those set before)",
                                  named < 0 ? "printed" : "all named", word, word);
                else if (named <= 0 && geteuid() == 0)
                        log_error("note: the groups whose flags stay set (without --rollback) are not %s: " PROGRAM
                                  " tree of %s shows them (a thaw --recursive of it clears every flag below it, also "
                                  "those set before)",
                                  named < 0 ? "printed" : "all named", path_q(path));
                else if (named <= 0 && word)
                        log_error("note: the groups whose flags stay set (without --rollback) are not %s: '" PROGRAM
                                  " tree %s' shows them ('" PROGRAM " thaw' of those it shows frozen clears them: "
                                  "they are yours; a thaw --recursive of %s is refused unless %s's own flag is "
                                  "yours too)",
                                  named < 0 ? "printed" : "all named", word, path_q(path), path_q(path));
                else if (named <= 0)
                        log_error("note: the groups whose flags stay set (without --rollback) are not %s: " PROGRAM
                                  " tree of %s shows them (a thaw of those it shows frozen clears them: they are "
                                  "yours; a thaw --recursive of it is refused unless its own flag is yours too)",
                                  named < 0 ? "printed" : "all named", path_q(path));
                return EXIT_FAILURE;
        }

        /* freezerd names them in its tree's order, which is no order to a
         * reader: sorted by their bytes, as list sorts its groups (and tree
         * its children). */
        for (n = 0; frozen[n]; n++)
                ;
        if (n > 1)
                qsort(frozen, n, sizeof(char *), str_ptr_cmp);

        note_frozen_in_excluded(f);

        if (!frozen[0]) {
                /* Not a failure (nothing is left to freeze), but not what a
                 * "freeze everything but" usually means either: said.  An
                 * excluded group deeper than a child of PATH leaves the
                 * groups between them running too, with their tasks. */
                bool between = running_between(path);
                log_error("note: nothing was frozen: the excluded subtrees hold every group below %s (the tasks of "
                          "%s itself%s keep running)",
                          path_q(path), path_q(path), between ? ", and of the groups between it and them," : "");
        }

        if (arg_json) {
                struct json_object *a = json_object_new_array();

                for (char **i = frozen; a && *i; i++)
                        if (json_append(a, json_object_new_string(*i)) < 0) {
                                json_object_put(a);
                                a = NULL;
                        }

                ret = print_json_and_put(a);
        } else
                for (char **i = frozen; *i; i++) {
                        _cleanup_free_ char *escaped = NULL;

                        puts(text_shown(*i, &escaped));
                }

        freezer_strv_free(frozen);
        return ret;
}

/* ---- batch ---- */

/* Read and parse the batch file (before connecting to the bus). Returns an
 * exit status: EXIT_SUCCESS, EXIT_FAILURE (cannot read) or EXIT_USAGE
 * (malformed). */
static int batch_load(const char *file, freezer_request **ret, size_t *ret_n) {
        _cleanup_free_ char *text = NULL, *error = NULL;
        const char *name = streq(file, "-") ? "standard input" : file;
        size_t len = 0;
        int fd, r;

        if (streq(file, "-"))
                fd = STDIN_FILENO;
        else {
                fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0) {
                        log_error("cannot open %s: %s", file, strerror(errno));
                        return EXIT_FAILURE;
                }
        }

        r = read_full_fd(fd, BATCH_JSON_SIZE_MAX, &text, &len);
        if (fd != STDIN_FILENO)
                (void) close(fd);
        if (r == -EFBIG) {
                log_error("%s: larger than %u MiB", name, BATCH_JSON_SIZE_MAX / (1024U * 1024U));
                return EXIT_USAGE;
        }
        if (r < 0) {
                log_error("cannot read %s: %s", name, strerror(-r));
                return EXIT_FAILURE;
        }

        r = batch_json_parse(text, len, ret, ret_n, &error);
        if (r == -ENOMEM || (r < 0 && !error)) {
                log_oom();
                return EXIT_FAILURE;
        }
        if (r < 0) {
                /* The parser's words are shown as written: they quote a key
                 * as JSON does (json_quote(): a backslash as "\\", a control
                 * character as \xNN) and give advice to type ("write it as
                 * \u0009"), which doubled backslashes would make wrong.  What
                 * else the input holds (C1, a byte that is no UTF-8) is still
                 * escaped, and so is the file name, ours to escape. */
                verbatim_message = error;
                verbatim_from = strlen(name) + 2;
                log_error("%s: %s", name, error);
                verbatim_message = NULL;
                return EXIT_USAGE;
        }

        return EXIT_SUCCESS;
}

static int verb_batch(caller *c, const char *file, const freezer_request *requests, size_t n) {
        uint32_t writes = 0, skipped = 0;
        int ret = EXIT_SUCCESS, r;

        if (!arg_no_wait) {
                ret = check_self_batch(c, file, requests, n);
                if (ret != EXIT_SUCCESS)
                        return ret;
        }

        interrupt_say("the batch from %s", streq(file, "-") ? "standard input" : file);
        r = caller_apply_batch(c, requests, n, request_flags(), &writes, &skipped);
        interrupt_done();
        if (r < 0 && caller_may_retry_on_bus(c, r))
                return EXIT_RETRY_ON_BUS;
        if (r < 0) {
                const char *name = caller_error_name(c), *message = caller_error_message(c);

                log_caller_failure(c, r, "cannot apply the batch from %s", streq(file, "-") ? "standard input" : file);
                /* A freezerd from before SKIP_MISSING refuses its bit as any
                 * unknown one, nothing written: said in the option's words. */
                if (arg_skip_missing && name && streq(name, "org.freedesktop.DBus.Error.InvalidArgs") && message &&
                    startswith(message, "Unknown flags 0x8 "))
                        log_error("note: this freezerd does not know --skip-missing (it is older than the option): "
                                  "nothing was written; leave out the groups that no longer exist and run it "
                                  "without --skip-missing");
                return EXIT_FAILURE;
        }

        if (arg_json) {
                struct json_object *o = json_object_new_object();

                if (!o ||
                    json_add(o, "writes", json_object_new_int64(writes)) < 0 ||
                    json_add(o, "skipped", json_object_new_int64(skipped)) < 0 ||
                    print_json(o) < 0) {
                        log_oom();
                        ret = EXIT_FAILURE;
                }
                json_object_put(o);
        } else
                printf("%" PRIu32 " write%s, %" PRIu32 " skipped\n", writes, writes == 1 ? "" : "s", skipped);

        return ret;
}

/* ---- status ---- */

static int verb_status(freezer *f, char **args, size_t n_args) {
        const char *path = n_args > 0 ? args[0] : "/";
        _cleanup_free_ char *shown = path_shown(path);
        _cleanup_(frozen_by_result_clear) frozen_by_result by = {};
        freezer_group g, *groups = NULL;
        size_t n_groups = 0;
        uint64_t id;
        bool have_id = true;
        char buf[64];
        bool tracks;
        int ret = EXIT_SUCCESS, r;

        r = lookup_group(f, path, &g, &id, &tracks);
        if (r == -ENODATA) {
                /* A freezerd without the Id property (before 0.5, so
                 * without LookupGroup either): the rest is there; the Id is
                 * said to be unknown. */
                have_id = false;
                r = freezer_get_group(f, path, &g);
        }
        if (r < 0) {
                log_failure(f, r, "cannot get status of %s", path_q(shown ?: path));
                return EXIT_FAILURE;
        }
        if (tracks)
                note_tracked(path);
        /* Which ancestor freezes it: their flags, from a listing, which
         * tracks none of them (looking each up would; PATH's ancestors are
         * listed as they were: a subtree the lookup began to track starts
         * at PATH).  Only a note: a failed listing leaves it unknown, not
         * the status unread. */
        if (state_by_parent(g.state) && freezer_list(f, &groups, &n_groups) >= 0) {
                if (n_groups > 0)
                        qsort(groups, n_groups, sizeof(groups[0]), group_cmp);
                listed_frozen_by(groups, n_groups, g.path, g.state, false, &by);
        }

        if (arg_json) {
                struct json_object *o = json_object_new_object();

                if (!o ||
                    json_add(o, "path", json_object_new_string(g.path)) < 0 ||
                    (have_id ? json_add(o, "id", json_object_new_uint64(id))
                             : json_object_object_add(o, "id", NULL)) < 0 ||
                    json_add(o, "state", json_object_new_string(state_str(g.state))) < 0 ||
                    json_add_string_or_null(o, "frozen_by", by.by) < 0 ||
                    json_add_untracked_between(o, &by) < 0 ||
                    json_add(o, "freeze", json_object_new_boolean(g.freeze)) < 0 ||
                    json_add(o, "frozen", json_object_new_boolean(g.frozen)) < 0 ||
                    json_add(o, "populated", json_object_new_boolean(g.populated)) < 0 ||
                    json_add(o, "descendants", json_object_new_int64(g.descendants)) < 0 ||
                    json_add(o, "frozen_descendants", json_object_new_int64(g.frozen_descendants)) < 0 ||
                    json_add(o, "frozen_usec", json_object_new_uint64(g.frozen_usec)) < 0 ||
                    print_json(o) < 0) {
                        log_oom();
                        ret = EXIT_FAILURE;
                }
                json_object_put(o);
        } else {
                _cleanup_free_ char *escaped = NULL;

                printf("%-20s%s\n", "Path:", text_shown(g.path, &escaped));
                if (have_id)
                        printf("%-20s%" PRIu64 "\n", "Id:", id);
                else
                        printf("%-20s%s\n", "Id:", "unknown (freezerd before 0.5)");
                printf("%-20s%s\n", "State:", state_str(g.state));
                if (by.by) {
                        /* Where the walk skipped untracked groups: one of
                         * them may be what freezes it, said as the note of
                         * thaw --recursive says it. */
                        _cleanup_free_ char *gap_raw = untracked_gap(&by, false), *gap_escaped = NULL,
                                            *by_escaped = NULL;
                        const char *gap = gap_raw ? text_shown(gap_raw, &gap_escaped) : NULL;

                        if (streq(by.by, FROZEN_UNTRACKED))
                                printf("%-20sa group %s\n", "Frozen by:", gap ?: "that freezerd does not track");
                        else
                                printf("%-20s%s%s%s%s\n", "Frozen by:",
                                       streq(by.by, FROZEN_ABOVE_ROOT) ? "a group above freezerd's cgroup root"
                                                                        : text_shown(by.by, &by_escaped),
                                       gap ? " (or a group " : "", gap ?: "", gap ? ")" : "");
                }
                printf("%-20s%s\n", "Freeze:", g.freeze ? "yes" : "no");
                printf("%-20s%s\n", "Frozen:", g.frozen ? "yes" : "no");
                printf("%-20s%s\n", "Populated:", g.populated ? "yes" : "no");
                printf("%-20s%" PRIu32 "\n", "Descendants:", g.descendants);
                printf("%-20s%" PRIu32 "\n", "Frozen descendants:", g.frozen_descendants);
                printf("%-20s%s\n", "Frozen in all:", format_duration(buf, sizeof(buf), g.frozen_usec));
        }

        freezer_group_clear(&g);
        freezer_group_array_free(groups, n_groups);
        return ret;
}

/* ---- list ---- */

/* ---- track, untrack ---- */

/* freezerd keeps what Track() added (and what any other command given a path
 * outside the tracked subtrees added) in its state directory, across
 * restarts: untrack is how it goes again.  As freeze and thaw: path by path,
 * stopping at the first failure; with --json, the same array of one object
 * per path handled. */
static int verb_track(freezer *f, bool track, char **paths, size_t n_paths) {
        struct json_object *results = NULL;
        int ret = EXIT_SUCCESS, r;

        if (arg_json) {
                results = json_object_new_array();
                if (!results) {
                        log_oom();
                        return EXIT_FAILURE;
                }
        }

        for (size_t i = 0; i < n_paths; i++) {
                call_path = paths[i];
                r = track ? freezer_track(f, paths[i]) : freezer_untrack(f, paths[i]);
                if (r < 0) {
                        _cleanup_free_ char *shown = path_shown(paths[i]);

                        log_failure(f, r, "cannot %s %s", track ? "track" : "untrack", path_q(shown ?: paths[i]));
                        ret = EXIT_FAILURE;
                }
                if (results && json_append_result(results, paths[i], r < 0, freezer_last_error_name(f),
                                                  freezer_last_error_message(f), NULL, 0) < 0) {
                        log_oom();
                        ret = EXIT_FAILURE;
                        break;
                }
                if (r < 0)
                        break;
        }

        if (results && print_json_and_put(results) != EXIT_SUCCESS)
                ret = EXIT_FAILURE;
        return ret;
}

static int group_id_cmp(const void *a, const void *b) {
        const freezer_group_id *x = a, *y = b;

        return strcmp(x->path, y->path);
}

static int verb_list(freezer *f) {
        freezer_group *groups = NULL;
        freezer_group_id *ids = NULL;
        size_t n = 0, n_ids = 0;
        int ret = EXIT_SUCCESS, r;

        r = freezer_list(f, &groups, &n);
        if (r < 0) {
                log_failure(f, r, "cannot list groups");
                return EXIT_FAILURE;
        }

        if (n > 0)
                qsort(groups, n, sizeof(groups[0]), group_cmp);

        if (arg_json) {
                struct json_object *a;

                /* The Ids come from a second call (ListGroups has none): a
                 * group made or removed between the two has a null one. */
                r = freezer_list_ids(f, &ids, &n_ids);
                if (r < 0) /* a freezerd before 0.5 (no ListGroupIds): null Ids */
                        ids = NULL, n_ids = 0;
                if (n_ids > 0)
                        qsort(ids, n_ids, sizeof(ids[0]), group_id_cmp);

                a = json_object_new_array();
                for (size_t i = 0; a && i < n; i++) {
                        _cleanup_(frozen_by_result_clear) frozen_by_result by = {};
                        struct json_object *o = json_object_new_object();
                        freezer_group_id key = { .path = groups[i].path }, *id;

                        id = n_ids > 0 ? bsearch(&key, ids, n_ids, sizeof(ids[0]), group_id_cmp) : NULL;
                        listed_frozen_by(groups, n, groups[i].path, groups[i].state, false, &by);
                        if (!o ||
                            json_add(o, "path", json_object_new_string(groups[i].path)) < 0 ||
                            json_add(o, "object", json_object_new_string(groups[i].object)) < 0 ||
                            json_add(o, "state", json_object_new_string(state_str(groups[i].state))) < 0 ||
                            (id ? json_add(o, "id", json_object_new_uint64(id->id))
                                : json_object_object_add(o, "id", NULL)) < 0 ||
                            json_add_string_or_null(o, "frozen_by", by.by) < 0 ||
                            json_add_untracked_between(o, &by) < 0 ||
                            json_append(a, TAKE_PTR(o)) < 0) {
                                json_object_put(o);
                                json_object_put(a);
                                a = NULL;
                        }
                }

                ret = print_json_and_put(a);
        } else {
                int width = 0;

                for (size_t i = 0; i < n; i++) {
                        int l = (int) strlen(state_str(groups[i].state));

                        if (l > width)
                                width = l;
                }

                for (size_t i = 0; i < n; i++) {
                        _cleanup_free_ char *escaped = NULL;

                        printf("%-*s %s\n", width, state_str(groups[i].state), text_shown(groups[i].path, &escaped));
                }
        }

        freezer_group_array_free(groups, n);
        freezer_group_id_array_free(ids, n_ids);
        return ret;
}

/* ---- tree ---- */

typedef struct tree_node {
        char *name;                     /* last component; the full path for the root */
        char *path;
        const freezer_group *group;     /* NULL if the daemon does not track it */
        struct tree_node **children;
        size_t n_children;
        size_t n_allocated;
} tree_node;

static tree_node *tree_node_free(tree_node *n) {
        if (!n)
                return NULL;

        for (size_t i = 0; i < n->n_children; i++)
                tree_node_free(n->children[i]);
        free(n->children);
        free(n->name);
        free(n->path);
        free(n);
        return NULL;
}

static tree_node *tree_node_new(const char *name, size_t name_len, const char *path, size_t path_len) {
        tree_node *n;

        n = calloc(1, sizeof(*n));
        if (!n)
                return NULL;

        n->name = strndup(name, name_len);
        n->path = strndup(path, path_len);
        if (!n->name || !n->path)
                return tree_node_free(n);

        return n;
}

static tree_node *tree_node_child(tree_node *parent, const char *name, size_t name_len,
                                  const char *path, size_t path_len) {
        tree_node *c;

        for (size_t i = 0; i < parent->n_children; i++) {
                c = parent->children[i];
                if (strlen(c->name) == name_len && memcmp(c->name, name, name_len) == 0)
                        return c;
        }

        if (GROW_ARRAY(parent->children, parent->n_allocated, parent->n_children + 1, 4) < 0)
                return NULL;

        c = tree_node_new(name, name_len, path, path_len);
        if (!c)
                return NULL;

        parent->children[parent->n_children++] = c;
        return c;
}

/* The part of path below root ("" for root itself), or NULL if path is not
 * root or below it. */
static const char *path_below(const char *path, const char *root) {
        const char *s;

        if (streq(root, "/"))
                return path[0] == '/' ? path + 1 : NULL;

        s = startswith(path, root);
        if (!s)
                return NULL;
        if (*s == 0)
                return s;
        if (*s != '/')
                return NULL;
        return s + 1;
}

static int tree_insert(tree_node *root, const freezer_group *g) {
        const char *rel, *p;
        tree_node *n = root;

        rel = path_below(g->path, root->path);
        if (!rel)
                return 0;

        p = rel;
        while (*p) {
                size_t l = strcspn(p, "/");

                if (l > 0) {
                        n = tree_node_child(n, p, l, g->path, (size_t) (p - g->path) + l);
                        if (!n)
                                return -ENOMEM;
                }

                p += l;
                if (*p == '/')
                        p++;
        }

        n->group = g;
        return 0;
}

static int tree_node_cmp(const void *a, const void *b) {
        const tree_node *const *x = a, *const *y = b;

        return strcmp((*x)->name, (*y)->name);
}

static void tree_sort(tree_node *n) {
        if (n->n_children > 1)
                qsort(n->children, n->n_children, sizeof(tree_node *), tree_node_cmp);
        for (size_t i = 0; i < n->n_children; i++)
                tree_sort(n->children[i]);
}

static void tree_print_line(const char *prefix, const char *connector, const tree_node *n) {
        _cleanup_free_ char *escaped = NULL;
        const char *name = text_shown(n->name, &escaped);

        if (n->group)
                printf("%s%s%s (%s)\n", prefix, connector, name, state_str(n->group->state));
        else
                printf("%s%s%s\n", prefix, connector, name);
}

static int tree_print_children(const tree_node *n, const char *prefix, bool utf8) {
        for (size_t i = 0; i < n->n_children; i++) {
                bool last = i + 1 == n->n_children;
                const char *connector, *continuation;
                char *p;
                int r;

                if (utf8) {
                        connector = last ? "└─" : "├─";
                        continuation = last ? "  " : "│ ";
                } else {
                        connector = last ? "`-" : "|-";
                        continuation = last ? "  " : "| ";
                }

                tree_print_line(prefix, connector, n->children[i]);

                if (n->children[i]->n_children == 0)
                        continue;

                if (asprintf(&p, "%s%s", prefix, continuation) < 0)
                        return -ENOMEM;
                r = tree_print_children(n->children[i], p, utf8);
                free(p);
                if (r < 0)
                        return r;
        }

        return 0;
}

static struct json_object *tree_to_json(const tree_node *n) {
        struct json_object *o, *children;

        o = json_object_new_object();
        if (!o)
                return NULL;

        if (json_add(o, "path", json_object_new_string(n->path)) < 0)
                goto fail;

        if (n->group) {
                if (json_add(o, "state", json_object_new_string(state_str(n->group->state))) < 0)
                        goto fail;
        } else if (json_object_object_add(o, "state", NULL) < 0)
                goto fail;

        children = json_object_new_array();
        if (json_add(o, "children", children) < 0)
                goto fail;

        for (size_t i = 0; i < n->n_children; i++)
                if (json_append(children, tree_to_json(n->children[i])) < 0)
                        goto fail;

        return o;

fail:
        json_object_put(o);
        return NULL;
}

static int verb_tree(freezer *f, char **args, size_t n_args) {
        freezer_group root_group = {}, *groups = NULL;
        tree_node *root = NULL;
        size_t n = 0;
        int ret = EXIT_FAILURE, r;

        if (n_args > 0) {
                /* Validates and normalizes the path, and makes the daemon
                 * track the subtree while the command runs, if it does not
                 * yet (with an older freezerd for good: said).  The listing
                 * below, made after it, has the subtree. */
                bool tracks;

                r = lookup_group(f, args[0], &root_group, NULL, &tracks);
                if (r < 0) {
                        _cleanup_free_ char *shown = path_shown(args[0]);

                        log_failure(f, r, "cannot show tree of %s", path_q(shown ?: args[0]));
                        return EXIT_FAILURE;
                }
                if (tracks)
                        note_tracked(args[0]);
        }

        r = freezer_list(f, &groups, &n);
        if (r < 0) {
                /* In the verb's words, with a PATH or without. */
                if (root_group.path)
                        log_failure(f, r, "cannot show tree of %s", path_q(root_group.path));
                else
                        log_failure(f, r, "cannot show tree");
                goto finish;
        }

        root = root_group.path ? tree_node_new(root_group.path, strlen(root_group.path),
                                               root_group.path, strlen(root_group.path))
                               : tree_node_new("/", 1, "/", 1);
        if (!root)
                goto oom;

        for (size_t i = 0; i < n; i++)
                if (tree_insert(root, &groups[i]) < 0)
                        goto oom;

        /* Show the state GetGroup gave if ListGroups raced with a change. */
        if (!root->group && root_group.path)
                root->group = &root_group;

        tree_sort(root);

        if (arg_json) {
                struct json_object *o = tree_to_json(root);

                if (!o || print_json(o) < 0) {
                        json_object_put(o);
                        goto oom;
                }
                json_object_put(o);
        } else {
                tree_print_line("", "", root);
                if (tree_print_children(root, "", is_locale_utf8()) < 0)
                        goto oom;
        }

        ret = EXIT_SUCCESS;
        goto finish;

oom:
        log_oom();
finish:
        tree_node_free(root);
        freezer_group_array_free(groups, n);
        freezer_group_clear(&root_group);
        return ret;
}

/* ---- pressure ---- */

/* An average as the kernel prints it (two decimals), as a JSON number.  In
 * the "C" locale: pressure and watch take the user's locale for their text,
 * and where its decimal point is a comma (de_DE, fr_FR, ...) "%.2f" gave
 * "0,50", which is no JSON.  NULL (no memory) as json-c's constructors. */
static struct json_object *json_avg(double v) {
        /* Two decimals, as the kernel gives them, with a '.' whatever the
         * locale: by integer arithmetic, no printf("%f") (a decimal comma in
         * de_DE is no JSON) and no locale switch per number. */
        long long cents = (long long) ((v < 0 ? -v : v) * 100 + 0.5);
        char buf[32];

        snprintf(buf, sizeof(buf), "%s%lld.%02lld", v < 0 && cents > 0 ? "-" : "", cents / 100, cents % 100);
        return json_object_new_double_s(v, buf);
}

static struct json_object *pressure_line_to_json(const freezer_pressure_line *l) {
        struct json_object *o = json_object_new_object();

        if (!o ||
            json_add(o, "avg10", json_avg(l->avg10)) < 0 ||
            json_add(o, "avg60", json_avg(l->avg60)) < 0 ||
            json_add(o, "avg300", json_avg(l->avg300)) < 0 ||
            json_add(o, "total_usec", json_object_new_uint64(l->total_usec)) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static void pressure_print_line(freezer_resource r, const char *kind, const freezer_pressure_line *l) {
        char buf[64];

        printf("%-8s %-4s %7.2f %7.2f %7.2f  %s\n", freezer_resource_to_string(r), kind,
               l->avg10, l->avg60, l->avg300, format_total(buf, sizeof(buf), l->total_usec));
}

typedef struct pressure_row {
        bool shown;
        freezer_pressure p;
        char *error;            /* NotSupported: the error name and message */
        char *message;
} pressure_row;

static int verb_pressure(freezer *f, char **args, size_t n_args) {
        const char *path = n_args > 0 ? args[0] : NULL;
        _cleanup_free_ char *shown = path_shown(path);
        pressure_row rows[FREEZER_RESOURCE_IRQ + 1] = {};
        struct json_object *o = NULL;
        _cleanup_(freezer_group_clear) freezer_group looked_up = {};
        const char *read_path = NULL;
        bool tracks = false;
        int ret = EXIT_FAILURE, r;

        /* Everything is read before anything is printed: a failure prints
         * nothing on standard output. */
        for (freezer_resource res = FREEZER_RESOURCE_CPU; res <= FREEZER_RESOURCE_IRQ; res++) {
                pressure_row *row = &rows[res];

                if (res == FREEZER_RESOURCE_IRQ && path)
                        break; /* a group has no IRQ pressure */

                /* The group is looked up first (held while the command
                 * runs), then read by its normalized path: by its object,
                 * with no lookup that would track it for good. */
                if (res == FREEZER_RESOURCE_CPU && path) {
                        r = lookup_group(f, path, &looked_up, NULL, &tracks);
                        if (r >= 0)
                                read_path = looked_up.path;
                } else
                        r = 0;
                if (r >= 0)
                        r = freezer_get_pressure(f, read_path ?: path, res, &row->p);
                /* The first read looked the group up (a hidden resource's
                 * NotSupported too). */
                if (tracks && res == FREEZER_RESOURCE_CPU && (r >= 0 || r == -EOPNOTSUPP))
                        note_tracked(path);
                if (r == -EOPNOTSUPP) {
                        if (res == FREEZER_RESOURCE_IRQ)
                                break; /* shown only where the kernel accounts it */
                        row->error = strdup(freezer_last_error_name(f) ?: "org.freezerd.Freezer1.Error.NotSupported");
                        row->message = strdup(freezer_last_error_message(f) ?: strerror(-r));
                        if (!row->error || !row->message)
                                goto oom;
                } else if (r < 0) {
                        /* The first read fails for the group, or the system, as a
                         * whole (it does not exist, access, no freezerd): no
                         * resource to name then. */
                        if (path && (res == FREEZER_RESOURCE_CPU || r == -ENOENT || r == -EACCES))
                                log_failure(f, r, "cannot read the pressure of %s", path_q(shown ?: path));
                        else if (path)
                                log_failure(f, r, "cannot read the %s pressure of %s",
                                            freezer_resource_to_string(res), path_q(shown ?: path));
                        else if (res == FREEZER_RESOURCE_CPU)
                                log_failure(f, r, "cannot read the system's pressure");
                        else
                                log_failure(f, r, "cannot read the system's %s pressure",
                                            freezer_resource_to_string(res));
                        goto finish;
                }
                row->shown = true;
        }

        if (!arg_json) {
                printf("%-8s %-4s %7s %7s %7s  %s\n", "RESOURCE", "KIND", "AVG10", "AVG60", "AVG300", "TOTAL");
                for (freezer_resource res = FREEZER_RESOURCE_CPU; res <= FREEZER_RESOURCE_IRQ; res++) {
                        const pressure_row *row = &rows[res];

                        if (!row->shown)
                                continue;
                        if (row->message) {
                                _cleanup_free_ char *escaped = NULL;

                                printf("%-8s not available: %s\n", freezer_resource_to_string(res),
                                       text_shown(row->message, &escaped));
                        }
                        else {
                                if (res != FREEZER_RESOURCE_IRQ)
                                        pressure_print_line(res, "some", &row->p.some);
                                /* No full figures (NaN): cpu before Linux 5.13. */
                                if (!isnan(row->p.full.avg10))
                                        pressure_print_line(res, "full", &row->p.full);
                        }
                }
                ret = EXIT_SUCCESS;
                goto finish;
        }

        o = json_object_new_object();
        if (!o ||
            (path ? json_add(o, "path", json_object_new_string(path)) : json_object_object_add(o, "path", NULL)) < 0)
                goto oom;

        for (freezer_resource res = FREEZER_RESOURCE_CPU; res <= FREEZER_RESOURCE_IRQ; res++) {
                const pressure_row *row = &rows[res];
                struct json_object *e;

                if (!row->shown)
                        continue;

                e = json_object_new_object();
                if (json_add(o, freezer_resource_to_string(res), e) < 0)
                        goto oom;
                if (row->message) {
                        if (json_add(e, "error", json_object_new_string(row->error)) < 0 ||
                            json_add(e, "message", json_object_new_string(row->message)) < 0)
                                goto oom;
                } else {
                        if (res != FREEZER_RESOURCE_IRQ &&
                            json_add(e, "some", pressure_line_to_json(&row->p.some)) < 0)
                                goto oom;
                        if (!isnan(row->p.full.avg10) &&
                            json_add(e, "full", pressure_line_to_json(&row->p.full)) < 0)
                                goto oom;
                }
        }

        if (print_json(o) < 0)
                goto oom;

        ret = EXIT_SUCCESS;
        goto finish;

oom:
        log_oom();
finish:
        json_object_put(o);
        for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
                free(rows[i].error);
                free(rows[i].message);
        }
        return ret;
}

/* ---- watch ---- */

typedef struct watch_context {
        const char *arg_path;   /* PATH as given; NULL: everything */
        freezer_group group;    /* PATH as freezerd resolved it */
        const char *path;       /* the watched subtree (group.path); NULL: everything */
        bool started;           /* the watching line printed: PATH resolved, triggers added */
        int ret;                /* EXIT_FAILURE once output failed */
        /* What was said of each watched group (keyed by its path): its state
         * as last printed, or as first listed (entry.state alone is used).  A freezerd that starts (again)
         * is compared with it, so that what changed while none ran is printed
         * too (watch_catch_up()). */
        group_table seen;
        bool listed; /* seen holds a freezerd's list (a first one is no catch-up) */
        /* A freezerd took the bus name since watch began: the state callback
         * subscribed to it within freezer_dispatch(), whose refusal (a bus
         * policy's AccessDenied, an older freezerd's UnknownMethod or Failed)
         * the next dispatch says (watch_refused()).  Restarted: one ran at
         * watch's start, or had started before. */
        bool daemon_started, daemon_restarted;
} watch_context;

static const char *kind_str(bool full) {
        return full ? "full" : "some";
}

/* Whether a duration is a lone number, without a unit: seconds, which one
 * who meant milliseconds ("100") is told of. */
static bool duration_bare(const char *s) {
        size_t n;

        s += strspn(s, " \t");
        n = strspn(s, "0123456789.");
        return n > 0 && s[n + strspn(s + n, " \t")] == '\0';
}

/* Parse RESOURCE:KIND:THRESHOLD:WINDOW.  *ret is what was read so far
 * (-ERANGE: both durations), and *ret_threshold_bare whether THRESHOLD is a
 * lone number (duration_bare()). */
static int parse_trigger(const char *s, trigger_spec *ret, bool *ret_threshold_bare) {
        _cleanup_free_ char *copy = strdup(s);
        char *fields[4], *p;
        size_t n = 0;
        int r;

        if (!copy)
                return -ENOMEM;

        for (p = copy; n < ELEMENTSOF(fields); n++) {
                fields[n] = p;
                p = strchr(p, ':');
                if (!p) {
                        n++;
                        break;
                }
                *p++ = 0;
        }
        if (n != ELEMENTSOF(fields) || p)
                return -EINVAL;

        r = freezer_resource_from_string(fields[0]);
        if (r < 0)
                return -EINVAL;
        *ret = (trigger_spec) { .resource = (freezer_resource) r };

        if (streq(fields[1], "some"))
                ret->full = false;
        else if (streq(fields[1], "full"))
                ret->full = true;
        else
                return -EINVAL;

        if (parse_duration(fields[2], &ret->threshold_usec) < 0 ||
            parse_duration(fields[3], &ret->window_usec) < 0)
                return -EINVAL;
        *ret_threshold_bare = duration_bare(fields[2]);
        /* What --help states, said before freezerd is asked (its InvalidArgs
         * made these exit 1, as a failure rather than a usage error). */
        if (ret->threshold_usec == 0 || ret->threshold_usec > ret->window_usec)
                return -ERANGE;
        if (ret->window_usec < PSI_WINDOW_MIN_USEC || ret->window_usec > PSI_WINDOW_MAX_USEC)
                return -EDOM;
        if (ret->resource == FREEZER_RESOURCE_IRQ && !ret->full)
                return -EOPNOTSUPP;

        return 0;
}

/* Add the trigger spec; on -ERANGE, *ret (THRESHOLD and WINDOW) and
 * *ret_threshold_bare are what parse_trigger() read, for the message. */
static int trigger_add(const char *spec, trigger_spec *ret, bool *ret_threshold_bare) {
        trigger_spec t = {}, *a;
        int r;

        r = parse_trigger(spec, &t, ret_threshold_bare);
        *ret = t;
        if (r < 0)
                return r;

        a = reallocarray(arg_triggers, n_arg_triggers + 1, sizeof(trigger_spec));
        if (!a)
                return -ENOMEM;
        arg_triggers = a;
        arg_triggers[n_arg_triggers++] = t;
        return 0;
}

static trigger_spec *trigger_by_id(uint32_t id) {
        for (size_t i = 0; i < n_arg_triggers; i++)
                if (arg_triggers[i].active && arg_triggers[i].id == id)
                        return &arg_triggers[i];
        return NULL;
}

/* Local time with milliseconds for text, UTC (RFC 3339) with microseconds
 * for JSON. */
static char *format_now(char *buf, size_t size, bool utc) {
        struct timespec ts;
        struct tm tm;
        size_t n;

        if (clock_gettime(CLOCK_REALTIME, &ts) < 0 ||
            !(utc ? gmtime_r(&ts.tv_sec, &tm) : localtime_r(&ts.tv_sec, &tm))) {
                snprintf(buf, size, "?");
                return buf;
        }

        n = strftime(buf, size, utc ? "%Y-%m-%dT%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &tm);
        if (utc)
                snprintf(buf + n, size - n, ".%06ldZ", ts.tv_nsec / 1000);
        else
                snprintf(buf + n, size - n, ".%03ld", ts.tv_nsec / 1000000);
        return buf;
}

/* A new event object with "time" and "event". */
static struct json_object *watch_event_new(const char *event) {
        struct json_object *o = json_object_new_object();
        char buf[64];

        if (!o ||
            json_add(o, "time", json_object_new_string(format_now(buf, sizeof(buf), true))) < 0 ||
            json_add(o, "event", json_object_new_string(event)) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

/* Print the event (taking o) on one line; the watch loop flushes after each
 * dispatch (a reader sees each event as it happens, and a storm's 10,000
 * lines cost a few writes, not 10,000). A NULL o is a failed allocation. */
static void watch_emit_json(watch_context *c, struct json_object *o, int r) {
        const char *s;

        if (!o || r < 0) {
                json_object_put(o);
                log_oom();
                c->ret = EXIT_FAILURE;
                return;
        }

        s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!s) {
                log_oom();
                c->ret = EXIT_FAILURE;
        } else
                puts(s);
        json_object_put(o);
}

/* One line of text watch: its paths (a group's name may hold U+2028, say)
 * shown as the other text outputs show them (text_shown()). */
_printf_(3, 4)
static void watch_emit_text(watch_context *c, const char *event, const char *fmt, ...) {
        _cleanup_free_ char *line = NULL, *escaped = NULL;
        char buf[64];
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&line, fmt, ap);
        va_end(ap);
        if (r < 0) {
                line = NULL;
                log_oom();
                c->ret = EXIT_FAILURE; /* as watch_emit_json() */
                return;
        }
        printf("%s %-8s %s\n", format_now(buf, sizeof(buf), false), event, text_shown(line, &escaped));
}

static bool watch_wants(watch_context *c, const char *path) {
        return !c->path || path_below(path, c->path);
}

/* Remembers what was said of a watched group.  A group the table cannot take
 * (out of memory) is only missed by a later catch-up. */
static void watch_note(watch_context *c, const char *path, freezer_state state) {
        group_entry *e = group_table_put(&c->seen, path, 0, NULL);

        if (e)
                e->state = state;
}

static void watch_print_state(watch_context *c, const char *path, freezer_state state, bool frozen) {
        struct json_object *o;
        int r;

        if (!arg_json) {
                watch_emit_text(c, "state", "%s %s", path, state_str(state));
                return;
        }

        o = watch_event_new("state");
        r = o ? json_add(o, "path", json_object_new_string(path)) : -ENOMEM;
        if (r >= 0)
                r = json_add(o, "state", json_object_new_string(state_str(state)));
        if (r >= 0)
                r = json_add(o, "frozen", json_object_new_boolean(frozen));
        watch_emit_json(c, o, r);
}

static void on_watch_state(freezer *f, const char *path, freezer_state state, bool frozen, void *userdata) {
        watch_context *c = userdata;

        if (!c->started || !watch_wants(c, path))
                return;
        watch_note(c, path, state);
        watch_print_state(c, path, state, frozen);
}

/* The kernel's "frozen" as a group's FreezerState implies it (as libfreezer
 * fills freezer_group.frozen from ListGroups): null where the state is not
 * known. */
static int json_add_frozen_of_state(struct json_object *o, freezer_state state) {
        int frozen = freezer_state_frozen(state);

        if (frozen < 0)
                return json_object_object_add(o, "frozen", NULL) < 0 ? -ENOMEM : 0;
        return json_add(o, "frozen", json_object_new_boolean(frozen));
}

static void watch_print_group(watch_context *c, const char *path, bool added, freezer_state state) {
        struct json_object *o;
        int r;

        if (!arg_json) {
                if (added)
                        watch_emit_text(c, "added", "%s %s", path, state_str(state));
                else
                        watch_emit_text(c, "removed", "%s", path);
                return;
        }

        o = watch_event_new(added ? "added" : "removed");
        r = o ? json_add(o, "path", json_object_new_string(path)) : -ENOMEM;
        if (r >= 0 && added)
                r = json_add(o, "state", json_object_new_string(state_str(state)));
        if (r >= 0 && added)
                r = json_add_frozen_of_state(o, state);
        watch_emit_json(c, o, r);
}

/* A group added or removed.  One that watch has said so of already is not
 * said again: the catch-up after a restart (watch_catch_up()) lists what the
 * new freezerd had, and its signals of the same changes may be queued behind
 * the list. */
static void on_watch_group(freezer *f, const char *path, bool added, freezer_state state, void *userdata) {
        watch_context *c = userdata;
        bool known;

        if (!c->started || !watch_wants(c, path))
                return;
        known = group_table_get_object(&c->seen, path);
        if (added) {
                watch_note(c, path, state);
                if (!known)
                        watch_print_group(c, path, true, state);
        } else if (known) {
                group_table_remove_object(&c->seen, path);
                watch_print_group(c, path, false, FREEZER_STATE_UNKNOWN);
        }
}

/* With --initial: the watched groups of a freezer_list() (groups, sorted by
 * path), one "listed" line each, right after the watching line.  The state
 * and group callbacks were installed before the list was asked for (their
 * matches and subscriptions first): what changed after freezerd built the
 * list is queued behind its reply, and printed after these lines. */
static void watch_print_listed(watch_context *c, const freezer_group *groups, size_t n_groups) {
        for (size_t i = 0; i < n_groups; i++) {
                const freezer_group *g = &groups[i];
                struct json_object *o;
                int r;

                if (!watch_wants(c, g->path))
                        continue;
                if (!arg_json) {
                        watch_emit_text(c, "listed", "%s %s", g->path, state_str(g->state));
                        continue;
                }
                o = watch_event_new("listed");
                r = o ? json_add(o, "path", json_object_new_string(g->path)) : -ENOMEM;
                if (r >= 0)
                        r = json_add(o, "state", json_object_new_string(state_str(g->state)));
                if (r >= 0)
                        r = json_add_frozen_of_state(o, g->state);
                watch_emit_json(c, o, r);
        }
}

/* The watched groups of a freezer_list(), remembered as the start of what
 * watch says (no line printed). */
static void watch_note_listed(watch_context *c, const freezer_group *groups, size_t n_groups) {
        for (size_t i = 0; i < n_groups; i++)
                if (watch_wants(c, groups[i].path))
                        watch_note(c, groups[i].path, groups[i].state);
}

/* A freezerd started (again): its groups (groups, as listed) against what
 * watch said last.  While none ran, groups may have been made, removed,
 * frozen or thawed (by hand, or by the new freezerd's recovery of a batch a
 * crash interrupted), and no signal told of it: each such group gets the
 * line it would have had, "added", "state" or "removed", so that a reader of
 * the lines ends up with the groups as they are. */
static void watch_catch_up(watch_context *c, const freezer_group *groups, size_t n_groups) {
        group_table before = c->seen;

        c->seen = (group_table) {};
        for (size_t i = 0; i < n_groups; i++) {
                const freezer_group *g = &groups[i];
                group_entry *e;

                if (!watch_wants(c, g->path))
                        continue;
                e = group_table_get_object(&before, g->path);
                watch_note(c, g->path, g->state);
                if (!e)
                        watch_print_group(c, g->path, true, g->state);
                else if (e->state != g->state)
                        watch_print_state(c, g->path, g->state, g->frozen);
        }
        for (size_t i = 0; i < before.n_entries; i++) {
                const group_entry *e = &before.entries[i];

                if (!e->removed && !group_table_get_object(&c->seen, e->object))
                        watch_print_group(c, e->object, false, FREEZER_STATE_UNKNOWN);
        }
        group_table_clear(&before);
}

/* The fields that name a pressure trigger in each of its events. */
static int json_add_trigger(struct json_object *o, const char *path, uint32_t id, freezer_resource res, bool full) {
        int r;

        r = json_add_string_or_null(o, "path", path);
        if (r >= 0)
                r = json_add(o, "id", json_object_new_int64(id));
        if (r >= 0)
                r = json_add(o, "resource", json_object_new_string(freezer_resource_to_string(res)));
        if (r >= 0)
                r = json_add(o, "kind", json_object_new_string(kind_str(full)));
        return r;
}

static void on_watch_pressure(freezer *f, const char *path, uint32_t id, freezer_resource res, bool full,
                              const freezer_pressure_line *l, void *userdata) {
        watch_context *c = userdata;
        struct json_object *o;
        char buf[64];
        int r;

        if (!arg_json) {
                watch_emit_text(c, "pressure",
                                "%s %s %s (trigger %" PRIu32 "): avg10 %.2f%% avg60 %.2f%% avg300 %.2f%% total %s",
                                path ?: "system", freezer_resource_to_string(res), kind_str(full), id,
                                l->avg10, l->avg60, l->avg300, format_total(buf, sizeof(buf), l->total_usec));
                return;
        }

        o = watch_event_new("pressure");
        r = o ? json_add_trigger(o, path, id, res, full) : -ENOMEM;
        if (r >= 0)
                r = json_add(o, "avg10", json_avg(l->avg10));
        if (r >= 0)
                r = json_add(o, "avg60", json_avg(l->avg60));
        if (r >= 0)
                r = json_add(o, "avg300", json_avg(l->avg300));
        if (r >= 0)
                r = json_add(o, "total_usec", json_object_new_uint64(l->total_usec));
        watch_emit_json(c, o, r);
}

static void on_watch_trigger_removed(freezer *f, const char *path, uint32_t id, freezer_resource res, bool full,
                                     const char *reason, void *userdata) {
        watch_context *c = userdata;
        trigger_spec *t = trigger_by_id(id);
        struct json_object *o;
        int r;

        if (t) {
                t->active = false;
                /* Gone with freezerd: added again once one is back (on_watch_resync()). */
                t->pending = streq_ptr(reason, "daemon-exited");
        }
        if (!c->started)
                return; /* added by a start that freezerd's exit cut short: never said */

        if (!arg_json) {
                watch_emit_text(c, "trigger-removed", "%s %s %s (trigger %" PRIu32 "): %s", path ?: "system",
                                freezer_resource_to_string(res), kind_str(full), id, reason);
                return;
        }

        o = watch_event_new("trigger-removed");
        r = o ? json_add_trigger(o, path, id, res, full) : -ENOMEM;
        if (r >= 0)
                r = json_add(o, "reason", json_object_new_string(reason));
        watch_emit_json(c, o, r);
}

/* The watching line, with the triggers in place: at the start all of them,
 * after a restart those added again. */
static void watch_emit_watching(watch_context *c) {
        struct json_object *o, *a;
        size_t n = 0;
        int r;

        if (!arg_json) {
                _cleanup_free_ char *escaped = NULL;
                char buf[64];

                printf("%s %-8s %s", format_now(buf, sizeof(buf), false), "watching",
                       c->path ? text_shown(c->path, &escaped) : "all groups");
                for (size_t i = 0; i < n_arg_triggers; i++) {
                        char t[64], w[64];

                        if (!arg_triggers[i].active)
                                continue;
                        printf("%s trigger %" PRIu32 ": %s %s %s per %s", n++ == 0 ? ";" : ",", arg_triggers[i].id,
                               freezer_resource_to_string(arg_triggers[i].resource),
                               kind_str(arg_triggers[i].full),
                               format_duration(t, sizeof(t), arg_triggers[i].threshold_usec),
                               format_duration(w, sizeof(w), arg_triggers[i].window_usec));
                }
                if (n > 0 && !c->path)
                        printf(" (system-wide)");
                putchar('\n');
                fflush(stdout);
                return;
        }

        o = watch_event_new("watching");
        r = o ? json_add_string_or_null(o, "path", c->path) : -ENOMEM;
        a = json_object_new_array();
        if (r >= 0)
                r = json_add(o, "triggers", a);
        else
                json_object_put(a);
        for (size_t i = 0; r >= 0 && i < n_arg_triggers; i++) {
                struct json_object *t;

                if (!arg_triggers[i].active)
                        continue;
                t = json_object_new_object();
                r = json_append(a, t);
                if (r >= 0)
                        r = json_add(t, "id", json_object_new_int64(arg_triggers[i].id));
                if (r >= 0)
                        r = json_add(t, "resource",
                                     json_object_new_string(freezer_resource_to_string(arg_triggers[i].resource)));
                if (r >= 0)
                        r = json_add(t, "kind", json_object_new_string(kind_str(arg_triggers[i].full)));
                if (r >= 0)
                        r = json_add(t, "threshold_usec", json_object_new_uint64(arg_triggers[i].threshold_usec));
                if (r >= 0)
                        r = json_add(t, "window_usec", json_object_new_uint64(arg_triggers[i].window_usec));
        }
        watch_emit_json(c, o, r);
}

/* Remove the triggers still in place; the daemon would drop them when we
 * disconnect, but say goodbye properly.  Not past the first failure: a
 * freezerd that does not answer (stopped, stuck) would not answer the next
 * call either, and each waited the method-call timeout (25 s) in turn, for
 * every trigger; the others end with the connection all the same. */
static void watch_remove_triggers(freezer *f, const char *path) {
        bool failed = false;

        for (size_t i = 0; i < n_arg_triggers; i++) {
                int r;

                if (!arg_triggers[i].active)
                        continue;
                arg_triggers[i].active = false;
                if (failed)
                        continue;

                r = freezer_remove_pressure_trigger(f, path, arg_triggers[i].id);
                /* -EINVAL: it ended meanwhile (its signal is still on the way). */
                if (r < 0 && r != -EINVAL) {
                        log_failure(f, r, "warning: cannot remove pressure trigger %" PRIu32
                                    " (the others end with the connection)", arg_triggers[i].id);
                        failed = true;
                }
        }
}

/* What SIGINT or SIGTERM end watch with outside its loop: while it sets up
 * and while it removes its triggers, where it waits in calls (up to 25 s
 * each, for a freezerd that does not answer) and the loop does not read the
 * signal.  At once, with this status: the triggers end with the connection. */
static volatile sig_atomic_t watch_exit_status = EXIT_SUCCESS;
/* SIGINT and SIGTERM. */
static sigset_t watch_signals;

static void on_watch_signal(_unused_ int sig) {
        _exit(watch_exit_status);
}

static void watch_signals_exit(const sigset_t *mask, int status) {
        watch_exit_status = status;
        (void) sigaction(SIGINT, &(struct sigaction) { .sa_handler = on_watch_signal }, NULL);
        (void) sigaction(SIGTERM, &(struct sigaction) { .sa_handler = on_watch_signal }, NULL);
        (void) sigprocmask(SIG_UNBLOCK, mask, NULL);
}

/* Around the calls watch makes from its loop, once a freezerd took the bus
 * name (its setup then, or after a restart the triggers added again and the
 * groups listed to catch up): there SIGINT and SIGTERM, blocked for the
 * loop, waited for each call, up to the method-call timeout apiece for a
 * freezerd that does not answer (stuck, or stopped as it starts).  They end
 * watch at once meanwhile, with status 0, as during the setup: its triggers
 * end with the connection.  The lines of the unfinished catch-up ("freezerd
 * started" on) are not flushed before, and go with it: a reader that sees
 * the started line may take the catch-up for done, as it always was. */
static void watch_calls_begin(void) {
        watch_signals_exit(&watch_signals, EXIT_SUCCESS);
}

static void watch_calls_end(void) {
        (void) sigprocmask(SIG_BLOCK, &watch_signals, NULL);
}


/* Add the pending triggers: all of them at the start, after a restart those
 * that the old freezerd's exit ended.  Returns how many it added; one that
 * freezerd refuses is said, the others are removed, and the errno returned.
 * Without a freezerd on the bus the rest stay pending, for the next one (the
 * ones added went with the freezerd that left: daemon-exited). */
static int watch_add_triggers(freezer *f, watch_context *c) {
        int n = 0, r;

        for (size_t i = 0; i < n_arg_triggers; i++) {
                trigger_spec *t = &arg_triggers[i];
                char th[64], w[64];

                if (!t->pending)
                        continue;
                r = freezer_add_pressure_trigger(f, c->path, t->resource, t->full, t->threshold_usec,
                                                 t->window_usec, &t->id);
                if (r < 0 && freezerd_absent(f))
                        break;
                if (r < 0) {
                        log_failure(f, r, "cannot add the pressure trigger %s:%s:%s:%s on %s",
                                    freezer_resource_to_string(t->resource), kind_str(t->full),
                                    format_duration(th, sizeof(th), t->threshold_usec),
                                    format_duration(w, sizeof(w), t->window_usec),
                                    c->path ? path_q(c->path) : "the system");
                        watch_remove_triggers(f, c->path);
                        return r;
                }
                t->pending = false;
                t->active = true;
                n++;
        }
        return n;
}

/* Before a watching line, with SIGINT and SIGTERM blocked for the loop: one
 * that came meanwhile (pending) ends watch at once, without the line, as
 * --help says of a signal before it: a script takes the line for "ready". */
static void watch_exit_if_signalled(void) {
        sigset_t pending;

#ifdef FREEZER_TEST_HOOKS
        /* Test builds only: stopped here, to be sent a signal that stays pending. */
        if (getenv("FREEZECTL_TEST_STOP_BEFORE_WATCHING"))
                (void) raise(SIGSTOP);
#endif
        if (sigpending(&pending) >= 0 &&
            (sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1))
                on_watch_signal(0);
}

/* What watch does first: look PATH up (which makes freezerd track its
 * subtree), note the groups listed, add the triggers and print the watching
 * line.  At its start, or, if no freezerd ran then, once one takes the bus
 * name.  Returns 1 once started, 0 without a freezerd on the bus (nothing
 * said: watch waits for one), or a negative errno (said). */
static int watch_start(freezer *f, watch_context *c) {
        freezer_group *groups = NULL;
        size_t n_groups = 0;
        int r;

        if (c->arg_path) {
                /* Validates the path, normalizes it, and makes the daemon
                 * track (and so publish) the subtree. */
                bool tracks;

                c->path = NULL;
                freezer_group_clear(&c->group);
                r = lookup_group(f, c->arg_path, &c->group, NULL, &tracks);
                if (r < 0 && freezerd_absent(f))
                        return 0;
                if (r < 0) {
                        _cleanup_free_ char *shown = path_shown(c->arg_path);

                        log_failure(f, r, "cannot watch %s", path_q(shown ?: c->arg_path));
                        return r;
                }
                if (tracks)
                        note_tracked(c->arg_path);
                c->path = c->group.path;
        }

        /* Tell the handle every group's state, so that a group a signal lists
         * for its counts alone (an ancestor of one that froze) is not printed
         * as a change. */
        r = freezer_list(f, &groups, &n_groups);
        if (r < 0 && freezerd_absent(f))
                return 0;
        if (r < 0 && arg_initial) {
                /* Without it --initial would print nothing to start from. */
                log_failure(f, r, "cannot list groups");
                return r;
        }
        if (r >= 0) {
                group_table_clear(&c->seen);
                watch_note_listed(c, groups, n_groups);
                c->listed = true;
                if (arg_initial && n_groups > 0)
                        qsort(groups, n_groups, sizeof(groups[0]), group_cmp);
                else {
                        freezer_group_array_free(groups, n_groups);
                        groups = NULL;
                        n_groups = 0;
                }
        }

        r = watch_add_triggers(f, c);
        if (r < 0) {
                freezer_group_array_free(groups, n_groups);
                return r;
        }
        for (size_t i = 0; i < n_arg_triggers; i++)
                if (arg_triggers[i].pending) {
                        freezer_group_array_free(groups, n_groups);
                        return 0; /* freezerd left meanwhile */
                }

        /* From the watching line on a signal is the loop's to read (it
         * removes the triggers first): one that came after the line ended
         * watch at once.  One that came before it, but once blocked here,
         * is pending: it ends watch at once too, without the line, as --help
         * says (watch_exit_if_signalled()). */
        (void) sigprocmask(SIG_BLOCK, &watch_signals, NULL);
        watch_exit_if_signalled();
        c->started = true;
        watch_emit_watching(c);
        watch_print_listed(c, groups, n_groups);
        freezer_group_array_free(groups, n_groups);
        return 1;
}

/* freezerd left the bus, or one took its name (a restart is both): said,
 * so that nobody takes the silence meanwhile for groups that did not change;
 * once one is there again, watch adds again the triggers that the old one's
 * exit ended (and prints the watching line again, with their new IDs), then
 * says what changed meanwhile (watch_catch_up()).  Before watch started (no
 * freezerd at its start) nothing is said: it starts once one comes.
 * Over --socket= the connection ends with the daemon and watch with it. */
/* Whether freezer_dispatch()'s failure r is the refusal of the state
 * callback's subscription to a freezerd that started since watch began
 * (libfreezer 0.6.5: its fallback's SubscribeGroups() refused other than by
 * a shortage or by freezerd gone), rather than the connection's failure.
 * libfreezer makes such a refusal the handle's last error, the D-Bus error
 * freezerd or the bus answered; what it fails with on its own, sd-bus'
 * errors while processing the connection, it names by the errno
 * (System.Error.EXXX where D-Bus has no name for it).  Only a freezerd that
 * started is subscribed within a dispatch: a refusal at watch's start fails
 * its freezer_set_state_callback() instead.  (Without the memory to copy the
 * D-Bus error the library keeps its errno alone, and a name derived from it;
 * for UnknownMethod, System.Error.EBADR: said as the connection's failure.) */
static bool watch_refused(freezer *f, const watch_context *c, int r) {
        const char *name = freezer_last_error_name(f);

        if (!c->daemon_started || r >= 0 || r == -ENOMEM || r == -ECONNRESET || r == -ENOTCONN)
                return false;
        return name && !startswith(name, "System.Error.") &&
               !streq(name, "org.freedesktop.DBus.Error.Disconnected") &&
               !streq(name, "org.freedesktop.DBus.Error.NoMemory");
}

static void on_watch_resync(freezer *f, freezer_resync_reason reason, void *userdata) {
        watch_context *c = userdata;
        const char *status = reason == FREEZER_RESYNC_DAEMON_EXITED    ? "exited"
                             : reason == FREEZER_RESYNC_DAEMON_STARTED ? "started"
                                                                       : NULL;
        struct json_object *o;
        int r;

        if (!status)
                return; /* disconnected: the loop says so, once */
        if (reason == FREEZER_RESYNC_DAEMON_STARTED) {
                c->daemon_restarted = c->started || c->daemon_started;
                c->daemon_started = true;
        }
        if (!c->started) {
                if (reason == FREEZER_RESYNC_DAEMON_STARTED) {
                        watch_calls_begin();
                        if (watch_start(f, c) < 0)
                                c->ret = EXIT_FAILURE;
                        watch_calls_end();
                }
                return;
        }
        /* What came before the catch-up (the exit, its triggers' ends, in the
         * same dispatch) is out before a Ctrl+C there may end watch at once,
         * dropping only the catch-up's own lines (--help). A failed write is
         * logged there, and the loop exits on it. */
        if (reason == FREEZER_RESYNC_DAEMON_STARTED)
                (void) stdout_flushed();
        if (!arg_json)
                watch_emit_text(c, "freezerd", "%s", status);
        else {
                o = watch_event_new("freezerd");
                r = o ? json_add(o, "status", json_object_new_string(status)) : -ENOMEM;
                watch_emit_json(c, o, r);
        }
        if (reason == FREEZER_RESYNC_DAEMON_STARTED) {
                /* As at the start: the handle learns every group's state, so an
                 * ancestor listed for its counts alone is not printed; and
                 * what changed while no freezerd ran is. */
                freezer_group *groups = NULL;
                size_t n_groups = 0;

                watch_calls_begin();
                r = watch_add_triggers(f, c);
                watch_calls_end();
                if (r < 0) {
                        c->ret = EXIT_FAILURE;
                        return;
                }
                if (r > 0) {
                        /* As at the start (watch_start()). */
                        watch_exit_if_signalled();
                        watch_emit_watching(c);
                }

                watch_calls_begin();
                r = freezer_list(f, &groups, &n_groups);
                watch_calls_end();
                if (r >= 0) {
                        /* Not if no freezerd had listed its groups before:
                         * then none was said, and none changed that watch
                         * would know of. */
                        if (c->listed)
                                watch_catch_up(c, groups, n_groups);
                        else
                                watch_note_listed(c, groups, n_groups);
                        c->listed = true;
                        freezer_group_array_free(groups, n_groups);
                }
        }
}

/* A run of freezer_dispatch()'s -ENOMEM (replies lost for lack of memory,
 * retried by libfreezer at most a second and a round trip apart while
 * memory lacks) ends once none came for this long. */
#define WATCH_ENOMEM_QUIET_USEC (5 * USEC_PER_SEC)

static int verb_watch(freezer *f, char **args, size_t n_args) {
        watch_context c = { .ret = EXIT_SUCCESS };
        sigset_t mask;
        int sfd = -1, ret = EXIT_FAILURE, r;
        /* The -ENOMEM of the run going on, and the last one's time. */
        unsigned n_enomem = 0;
        uint64_t enomem_last = 0;

        /* SIGINT and SIGTERM end the watch through the loop (blocked there,
         * read from sfd), so that the triggers are removed first.  During the
         * setup they end it at once (blocked from the start, they waited for
         * every call of it: a freezerd that does not answer took 25 s each). */
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        watch_signals = mask;
        watch_signals_exit(&mask, EXIT_SUCCESS);
        sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sfd < 0) {
                fprintf(stderr, PROGRAM ": cannot create a signalfd: %s\n", strerror(errno));
                goto finish;
        }

        /* The callbacks (and their bus matches) first: nothing that happens
         * after they are in place is missed. */
        r = freezer_set_state_callback(f, on_watch_state, &c);
        if (r >= 0)
                r = freezer_set_group_callback(f, on_watch_group, &c);
        if (r >= 0)
                r = freezer_set_pressure_callback(f, on_watch_pressure, &c);
        if (r >= 0)
                r = freezer_set_pressure_removed_callback(f, on_watch_trigger_removed, &c);
        if (r >= 0)
                r = freezer_set_resync_callback(f, on_watch_resync, &c);
        if (r < 0) {
                log_failure(f, r, "cannot follow freezerd's signals");
                goto finish;
        }

        c.arg_path = n_args > 0 ? args[0] : NULL;
        for (size_t i = 0; i < n_arg_triggers; i++)
                arg_triggers[i].pending = true;
        r = watch_start(f, &c);
        if (r < 0)
                goto finish;
        if (r == 0)
                /* Not an error: watch starts once one comes (on_watch_resync()). */
                log_error("freezerd is not running (nobody owns " FREEZER_SERVICE
                          " on the bus): watch waits for it");

        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
                fprintf(stderr, PROGRAM ": cannot block signals: %s\n", strerror(errno));
                goto finish;
        }

        const char *lost = arg_bus == BUS_PRIVATE ? "lost the connection to freezerd (its private socket)"
                                                  : "lost the connection to the bus";
        for (;;) {
                struct pollfd p[2];

                /* Also what arrived during the blocking calls above. */
                r = freezer_dispatch(f);
                /* What the callbacks printed, before we sleep.  Output that
                 * cannot be written (a reader gone, with SIGPIPE ignored as
                 * systemd's services have it; a full disk) ends the watch:
                 * it went on for ever, printing to nobody. */
                if (!stdout_flushed())
                        break;
                if (r == -ECONNRESET || r == -ENOTCONN) {
                        /* Said once: log_failure() would add "lost the connection to freezerd".
                         * sd-bus reads a clean close as ECONNRESET too: over the private
                         * socket that is freezerd gone (its exit, a restart), which
                         * "Connection reset by peer" made look like a crash. */
                        if (arg_bus == BUS_PRIVATE)
                                log_error("watch: %s: freezerd closed it (it exited or restarted)", lost);
                        else
                                log_error("watch: %s (%s)", lost, strerror(-r));
                        goto finish; /* the triggers went with the connection */
                }
                /* A reply that makes up for missed signals could not be
                 * queued: the handle stays usable and asks for it again
                 * from a later dispatch, so what changed meanwhile is
                 * printed then, late.  Said once per run of them: under a
                 * lasting shortage every retry fails too. */
                if (r == -ENOMEM) {
                        if (n_enomem == 0)
                                log_error("watch: out of memory, some changes may be reported late");
                        if (n_enomem < UINT_MAX)
                                n_enomem++;
                        enomem_last = now_usec();
                } else if (watch_refused(f, &c, r)) {
                        /* The connection is fine, but freezerd (or the bus'
                         * policy) refused to report the groups' changes, for
                         * good until it starts again: a watch that goes on
                         * would print no state change, its silence taken for
                         * groups that do not change.  Ended as when that
                         * refusal comes at watch's start (exit status 1), its
                         * triggers removed first, the connection being up. */
                        log_failure(f, r, "watch: freezerd refused to report state changes after it %s",
                                    c.daemon_restarted ? "restarted" : "started");
                        break;
                } else if (r < 0) {
                        log_failure(f, r, "watch: %s", lost);
                        goto finish;
                }
                if (c.ret != EXIT_SUCCESS)
                        break;

                p[0] = (struct pollfd) { .fd = freezer_get_fd(f), .events = POLLIN };
                p[1] = (struct pollfd) { .fd = sfd, .events = POLLIN };
                if (p[0].fd < 0) {
                        log_failure(f, p[0].fd, "watch: %s", lost);
                        goto finish;
                }

                /* Also when the handle is due without the fd (messages a blocking
                 * call queued, more left by a bounded dispatch, a deadline). */
                uint64_t due;
                if (freezer_get_timeout(f, &due) <= 0)
                        due = UINT64_MAX;
                /* The end of a run of -ENOMEM, said when it comes. */
                if (n_enomem > 0) {
                        uint64_t quiet = usec_add(enomem_last, WATCH_ENOMEM_QUIET_USEC);

                        if (now_usec() >= quiet) {
                                if (n_enomem > 1)
                                        log_error("watch: out of memory %u times in a row, none for %" PRIu64
                                                  " s since",
                                                  n_enomem, WATCH_ENOMEM_QUIET_USEC / USEC_PER_SEC);
                                n_enomem = 0;
                        } else if (quiet < due)
                                due = quiet;
                }

                if (poll(p, ELEMENTSOF(p), poll_timeout_ms(due)) < 0) {
                        if (errno == EINTR)
                                continue;
                        fprintf(stderr, PROGRAM ": poll() failed: %s\n", strerror(errno));
                        break;
                }

                if (p[1].revents) {
                        struct signalfd_siginfo si;

                        if (read(sfd, &si, sizeof(si)) == (ssize_t) sizeof(si)) {
                                ret = c.ret;
                                break;
                        }
                }
        }

        /* One more signal would wait for the end of the removal: let it end
         * watch instead. */
        watch_signals_exit(&mask, ret);
        watch_remove_triggers(f, c.path);

finish:
        watch_exit_status = ret;
        fflush(stdout);
        (void) freezer_set_state_callback(f, NULL, NULL);
        (void) freezer_set_group_callback(f, NULL, NULL);
        (void) freezer_set_pressure_callback(f, NULL, NULL);
        (void) freezer_set_pressure_removed_callback(f, NULL, NULL);
        (void) freezer_set_resync_callback(f, NULL, NULL);
        freezer_group_clear(&c.group);
        group_table_clear(&c.seen);
        if (sfd >= 0)
                (void) close(sfd);
        /* The signals stay blocked, or end watch with ret: one more ^C
         * while we exit must not turn the exit status into death by SIGINT. */
        return ret;
}

/* ---- main ---- */

/* The options that apply only to some commands. */
typedef enum verb_option {
        VERB_OPT_WAIT      = 1 << 0, /* --timeout, --no-wait, --rollback */
        VERB_OPT_RECURSIVE = 1 << 1,
        VERB_OPT_EXCEPT    = 1 << 2,
        VERB_OPT_ORDER     = 1 << 3,
        VERB_OPT_TRIGGER   = 1 << 4,
        VERB_OPT_SKIP_MISSING = 1 << 5,
        VERB_OPT_INITIAL   = 1 << 6,
} verb_option;

typedef struct verb {
        const char *name;
        size_t min_args;
        size_t max_args;
        const char *arg_name;
        unsigned options;
} verb;

static const verb verbs[] = {
        { "freeze", 1, SIZE_MAX, "PATH", VERB_OPT_WAIT | VERB_OPT_RECURSIVE | VERB_OPT_EXCEPT },
        { "thaw",   1, SIZE_MAX, "PATH", VERB_OPT_WAIT | VERB_OPT_RECURSIVE                   },
        { "batch",  1, 1,        "FILE", VERB_OPT_WAIT | VERB_OPT_RECURSIVE | VERB_OPT_ORDER |
                                         VERB_OPT_SKIP_MISSING                                },
        { "status", 0, 1,        "PATH", 0                                                    },
        { "list",   0, 0,        NULL,   0                                                    },
        { "tree",   0, 1,        "PATH", 0                                                    },
        { "pressure", 0, 1,      "PATH", 0                                                    },
        { "watch",  0, 1,        "PATH", VERB_OPT_TRIGGER | VERB_OPT_INITIAL                  },
        { "track",  1, SIZE_MAX, "PATH", 0                                                    },
        { "untrack", 1, SIZE_MAX, "PATH", 0                                                   },
};

/* Whether what v prints depends on the locale: decimal numbers (status,
 * pressure), the tree's glyphs, times (watch). freeze, thaw and batch print
 * paths, counts and error messages only, so they keep the "C" locale: loading
 * the user's locale means a dozen file look-ups and mappings, a good part of
 * the time a "freezectl freeze" takes. */
static bool verb_needs_locale(const verb *v) {
        return !streq(v->name, "freeze") && !streq(v->name, "thaw") && !streq(v->name, "batch") &&
               !streq(v->name, "track") && !streq(v->name, "untrack");
}

/* The first option given that v does not take, or NULL; *ret_option is its
 * verb_option. */
static const char *verb_unwanted_option(const verb *v, unsigned *ret_option) {
        const char *name = NULL;

        if (!(v->options & VERB_OPT_WAIT) && (arg_timeout_set || arg_no_wait || arg_rollback)) {
                *ret_option = VERB_OPT_WAIT;
                name = arg_timeout_set ? "--timeout" : arg_no_wait ? "--no-wait" : "--rollback";
        } else if (!(v->options & VERB_OPT_RECURSIVE) && arg_recursive) {
                *ret_option = VERB_OPT_RECURSIVE;
                name = "--recursive";
        } else if (!(v->options & VERB_OPT_EXCEPT) && n_arg_except > 0) {
                *ret_option = VERB_OPT_EXCEPT;
                name = "--except";
        } else if (!(v->options & VERB_OPT_ORDER) && arg_order_set) {
                *ret_option = VERB_OPT_ORDER;
                name = "--order";
        } else if (!(v->options & VERB_OPT_TRIGGER) && n_arg_triggers > 0) {
                *ret_option = VERB_OPT_TRIGGER;
                name = "--trigger";
        } else if (!(v->options & VERB_OPT_SKIP_MISSING) && arg_skip_missing) {
                *ret_option = VERB_OPT_SKIP_MISSING;
                name = "--skip-missing";
        } else if (!(v->options & VERB_OPT_INITIAL) && arg_initial) {
                *ret_option = VERB_OPT_INITIAL;
                name = "--initial";
        }

        return name;
}

static const char *verbs_taking(unsigned option) {
        switch (option) {
        case VERB_OPT_WAIT:
        case VERB_OPT_RECURSIVE:
                return "freeze, thaw and batch";
        case VERB_OPT_EXCEPT:
                return "freeze";
        case VERB_OPT_ORDER:
        case VERB_OPT_SKIP_MISSING:
                return "batch";
        case VERB_OPT_TRIGGER:
        case VERB_OPT_INITIAL:
                return "watch";
        default:
                return "other commands";
        }
}

/* Whether desc, an option's description in --help, starts with the list of
 * the commands it applies to ("freeze, thaw, batch: ...", "watch: ...") and
 * name is one of them. */
static bool help_option_for(const char *desc, const char *name) {
        const char *colon = strchr(desc, ':');
        bool found = false;

        if (!colon)
                return false;
        for (const char *w = desc; w < colon;) {
                size_t n = strcspn(w, ",:");
                bool known = false;

                for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                        if (strlen(verbs[i].name) == n && strncmp(w, verbs[i].name, n) == 0)
                                known = true;
                if (!known)
                        return false;
                if (strlen(name) == n && strncmp(w, name, n) == 0)
                        found = true;
                w += n;
                if (*w == ',')
                        w += strspn(w, ", ");
        }
        return found;
}

/* The column where --help's descriptions start. */
#define HELP_DESC_COLUMN 23

/* "COMMAND --help", "help COMMAND": the entries of --help about COMMAND, and
 * the options only some commands take that it takes, cut from the whole
 * text (so that the two never disagree).  Returns an exit status; a usage
 * error for a COMMAND that --help does not list. */
static int help_command(const char *name) {
        _cleanup_free_ char *text = NULL;
        char *line, *next;
        size_t size = 0;
        enum { OTHER, COMMANDS, OPTIONS } section = OTHER;
        bool listed = false, options = false, printing = false;
        FILE *f;

        f = open_memstream(&text, &size);
        if (!f) {
                log_oom();
                return EXIT_FAILURE;
        }
        help_to(f);
        if (fclose(f) != 0 || !text) {
                log_oom();
                return EXIT_FAILURE;
        }

        for (line = text; *line; line = next) {
                bool entry;

                next = strchrnul(line, '\n');
                if (*next)
                        *next++ = 0;

                if (streq(line, "Commands:") || streq(line, "Options:")) {
                        section = streq(line, "Commands:") ? COMMANDS : OPTIONS;
                        printing = false;
                        continue;
                }
                if (!*line) {
                        section = OTHER;
                        printing = false;
                        continue;
                }
                if (section == OTHER)
                        continue;

                /* An entry's first line starts in the first columns, its
                 * description goes on in HELP_DESC_COLUMN. */
                entry = strspn(line, " ") < HELP_DESC_COLUMN;
                if (entry && section == COMMANDS) {
                        const char *w = line + strspn(line, " ");
                        size_t n = strcspn(w, " ");

                        printing = strlen(name) == n && strncmp(w, name, n) == 0;
                        if (printing && !listed) {
                                printf("%s %s (from '%s --help'):\n\n", PROGRAM, name, PROGRAM);
                                listed = true;
                        }
                } else if (entry && section == OPTIONS) {
                        /* The description: on the same line, or the next. */
                        const char *d = strlen(line) > HELP_DESC_COLUMN && line[HELP_DESC_COLUMN - 1] == ' ' &&
                                                        line[HELP_DESC_COLUMN] != ' '
                                                ? line + HELP_DESC_COLUMN
                                                : next + strspn(next, " ");

                        printing = listed && help_option_for(d, name);
                        if (printing && !options)
                                printf("\nOptions of %s:\n", name);
                        options = options || printing;
                }
                if (printing)
                        puts(line);
        }

        if (!listed) {
                usage_error("unknown command '%s'", name);
                return EXIT_USAGE;
        }
        printf("\nSee '%s --help' for the options of every command (the bus, --json),\n"
               "PATH, DURATION, the output and the exit status.\n", PROGRAM);
        return EXIT_SUCCESS;
}

static int parse_order(const char *s, freezer_order *ret) {
        for (unsigned i = 0; order_to_string(i); i++)
                if (streq(s, order_to_string(i))) {
                        *ret = (freezer_order) i;
                        return 0;
                }
        return -EINVAL;
}

static int except_add(char *path) {
        char **a;

        a = reallocarray(arg_except, n_arg_except + 1, sizeof(char *));
        if (!a)
                return -ENOMEM;
        arg_except = a;
        a = reallocarray(arg_except_norm, n_arg_except + 1, sizeof(char *));
        if (!a)
                return -ENOMEM;
        arg_except_norm = a;
        arg_except[n_arg_except] = path;
        arg_except_norm[n_arg_except++] = path_shown(path);
        return 0;
}

/* Returns > 0 to go on, 0 to exit successfully (--help, --version), < 0 on
 * usage errors. */
/* The long options without a short form. */
enum {
        ARG_VERSION = 0x100,
        ARG_SYSTEM,
        ARG_USER,
        ARG_ADDRESS,
        ARG_SOCKET,
        ARG_JSON,
        ARG_TIMEOUT,
        ARG_NO_WAIT,
        ARG_ROLLBACK,
        ARG_RECURSIVE,
        ARG_EXCEPT,
        ARG_ORDER,
        ARG_TRIGGER,
        ARG_SKIP_MISSING,
        ARG_INITIAL,
};

/* --system, --user, --address=, --socket=: one way to freezerd. Given two,
 * the last would win silently. */
static int set_bus(int option, const char *arg) {
        static const struct {
                int option;
                const char *name;
                bus_kind bus;
        } ways[] = {
                { ARG_SYSTEM,  "--system",  BUS_SYSTEM  },
                { ARG_USER,    "--user",    BUS_USER    },
                { ARG_ADDRESS, "--address", BUS_ADDRESS },
                { ARG_SOCKET,  "--socket",  BUS_PRIVATE },
        };
        static const char *given = NULL;

        for (size_t i = 0; i < ELEMENTSOF(ways); i++) {
                if (ways[i].option != option)
                        continue;
                if (given && !streq(given, ways[i].name))
                        return usage_error("%s and %s name two ways to freezerd: give one", given, ways[i].name);
                given = ways[i].name;
                if (option == ARG_ADDRESS && !*arg)
                        return usage_error("--address= needs a D-Bus address");
                if (option == ARG_SOCKET && !*arg)
                        return usage_error("--socket= needs the path of freezerd's private socket");
                arg_bus = ways[i].bus;
                if (option == ARG_ADDRESS)
                        arg_address = arg;
                if (option == ARG_SOCKET)
                        arg_socket = arg;
        }
        return 0;
}

/* Whether the argument arg (which starts with "--") is a long option of
 * options, exact or abbreviated as getopt_long() takes it, that takes its
 * argument from the next one (no "=" in arg). */
static bool long_option_takes_next(const struct option *options, const char *arg) {
        size_t n = strcspn(arg + 2, "=");
        const struct option *found = NULL;

        if (arg[2 + n] == '=')
                return false;
        for (const struct option *o = options; o->name; o++) {
                if (strncmp(o->name, arg + 2, n) != 0)
                        continue;
                if (o->name[n] == 0)
                        return o->has_arg == required_argument;
                if (found) /* ambiguous: getopt_long() refuses it, taking nothing */
                        return false;
                found = o;
        }
        return found && found->has_arg == required_argument;
}

/* The words of argv (as given, not permuted) that are no option nor an
 * option's argument: the command, and after "help" the one it is asked
 * about, into words.  Returns how many (0 to 2). */
static size_t command_words(const struct option *options, int argc, char **argv, const char *words[static 2]) {
        size_t n = 0;
        bool dashdash = false;

        for (int i = 1; i < argc && n < 2; i++) {
                const char *a = argv[i];

                if (!dashdash && streq(a, "--")) {
                        dashdash = true;
                        continue;
                }
                if (!dashdash && a[0] == '-' && a[1] != 0) {
                        if (a[1] == '-' && long_option_takes_next(options, a))
                                i++;
                        continue;
                }
                if (n == 1 && !streq(words[0], "help"))
                        break;
                words[n++] = a;
        }
        return n;
}

/* -h or --help, once parsed: print the help of the command named among the
 * arguments (argv as given, before getopt_long() permuted it; "help COMMAND"
 * names COMMAND), or the whole help without one, and look at no other
 * option.  0, or -EINVAL for an unknown command. */
static int help_now(const struct option *options, int argc, char **argv) {
        const char *words[2] = {};
        size_t n = command_words(options, argc, argv, words);

        if (n == 0 || (streq(words[0], "help") && n == 1)) {
                help();
                return 0;
        }
        return help_command(streq(words[0], "help") ? words[1] : words[0]) == EXIT_SUCCESS ? 0 : -EINVAL;
}

/* getopt_long() found no option of options in an argument (given: argv as
 * given; argv: as getopt_long() permuted it so far): said, and where the
 * command takes PATHs (or a FILE), the word starts with one '-' and comes
 * after the command word, how to pass one that starts with '-'
 * ("freezectl freeze -odd" for the group /-odd read -o as an option). */
static int invalid_option(const struct option *options, int argc, char **argv, char **given) {
        const char *words[2] = {}, *word = argv[optind - 1];
        const verb *v = NULL;
        char option[3] = {};
        bool after_command = false;

        if (optopt > 0 && optopt < 0x100) {
                /* getopt_long() steps optind past an argument only once it read
                 * its last letter, so optind alone does not tell which one it
                 * was ("-x" or "-xyz"). -h, the only short option, stops the
                 * parsing as an unknown letter does: the word is the first
                 * argument as given that holds short options, its first
                 * letter the unknown one. */
                bool command = false;

                for (int i = 1; i < argc; i++) {
                        const char *a = given[i];

                        if (streq(a, "--"))
                                break;
                        if (a[0] != '-' || a[1] == 0) {
                                command = true;
                                continue;
                        }
                        if (a[1] == '-') {
                                if (long_option_takes_next(options, a))
                                        i++;
                                continue;
                        }
                        word = a;
                        after_command = command;
                        break;
                }
                option[0] = '-';
                option[1] = (char) optopt;
        }
        if (command_words(options, argc, given, words) > 0)
                for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                        if (streq(verbs[i].name, words[0]))
                                v = &verbs[i];
        /* Not for a long option ("--bogus"): a mistyped option, far more
         * likely than a path that starts with "--"; nor for one before the
         * command ("-x freeze /a"): an option of freezectl, no path. */
        if (!v || v->max_args == 0 || !after_command)
                return usage_error("invalid option '%s'", option[0] ? option : word);

        /* The word in the command as a shell word (none where the line
         * would show it escaped: shell_word()). */
        _cleanup_free_ char *tofree = NULL;
        const char *shown = shell_word(word, &tofree);
        if (shown)
                log_error("invalid option '%s' (see --help; a %s that starts with '-' goes after '--': "
                          PROGRAM " %s -- %s)", option[0] ? option : word, streq(v->arg_name, "FILE") ? "file" : "path",
                          v->name, shown);
        else
                log_error("invalid option '%s' (see --help; a %s that starts with '-' goes after '--')",
                          option[0] ? option : word, streq(v->arg_name, "FILE") ? "file" : "path");
        return -EINVAL;
}

static int parse_argv(int argc, char *argv[]) {
        static const struct option options[] = {
                { "help",     no_argument,       NULL, 'h'          },
                { "version",  no_argument,       NULL, ARG_VERSION  },
                { "system",   no_argument,       NULL, ARG_SYSTEM   },
                { "user",     no_argument,       NULL, ARG_USER     },
                { "address",  required_argument, NULL, ARG_ADDRESS  },
                { "socket",   required_argument, NULL, ARG_SOCKET   },
                { "json",     no_argument,       NULL, ARG_JSON     },
                { "timeout",  required_argument, NULL, ARG_TIMEOUT  },
                { "no-wait",  no_argument,       NULL, ARG_NO_WAIT  },
                { "rollback", no_argument,       NULL, ARG_ROLLBACK },
                { "recursive", no_argument,      NULL, ARG_RECURSIVE },
                { "except",   required_argument, NULL, ARG_EXCEPT   },
                { "order",    required_argument, NULL, ARG_ORDER    },
                { "trigger",  required_argument, NULL, ARG_TRIGGER  },
                { "skip-missing", no_argument,   NULL, ARG_SKIP_MISSING },
                { "initial",  no_argument,       NULL, ARG_INITIAL  },
                {}
        };
        _cleanup_free_ char **given = NULL;
        int c, r;

        /* getopt_long() permutes argv; help_now() reads it as given. */
        given = calloc(argc + 1, sizeof(char *));
        if (!given) {
                log_oom();
                return -ENOMEM;
        }
        memcpy(given, argv, sizeof(char *) * argc);

        opterr = 0;

        /* No leading '+' in optstring: GNU getopt permutes, so options may
         * follow the command; "--" stops option parsing. */
        while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
                switch (c) {

                case 'h':
                        /* At once, as GNU tools do: the options after it are
                         * not looked at ("--help --bogus" prints the help).
                         * "COMMAND --help" shows COMMAND's part. */
                        return help_now(options, argc, given);

                case ARG_VERSION:
                        puts(PROGRAM " " FREEZERD_VERSION);
                        return 0;

                case ARG_SYSTEM:
                case ARG_USER:
                case ARG_ADDRESS:
                case ARG_SOCKET:
                        r = set_bus(c, optarg);
                        if (r < 0)
                                return r;
                        break;

                case ARG_JSON:
                        arg_json = true;
                        break;

                case ARG_TIMEOUT:
                        r = parse_duration(optarg, &arg_timeout_usec);
                        if (r == -ERANGE)
                                return usage_error("duration out of range: '%s' (from 1us to about "
                                                   "584,000 years; 0 means freezerd's default)", optarg);
                        if (r < 0)
                                return usage_error("invalid duration '%s' (units us, ms, s, min, h; no days nor "
                                                   "\"infinity\": e.g. 5s, 250ms, 1.5s, 2min 3s)", optarg);
                        arg_timeout_set = true;
                        break;

                case ARG_NO_WAIT:
                        arg_no_wait = true;
                        break;

                case ARG_ROLLBACK:
                        arg_rollback = true;
                        break;

                case ARG_RECURSIVE:
                        arg_recursive = true;
                        break;

                case ARG_SKIP_MISSING:
                        arg_skip_missing = true;
                        break;

                case ARG_INITIAL:
                        arg_initial = true;
                        break;

                case ARG_EXCEPT:
                        if (!*optarg)
                                return usage_error("--except= needs a PATH");
                        if (except_add(optarg) < 0) {
                                log_oom();
                                return -ENOMEM;
                        }
                        break;

                case ARG_ORDER:
                        if (parse_order(optarg, &arg_order) < 0)
                                return usage_error("invalid order '%s' (expected auto, top-down or bottom-up)",
                                                   optarg);
                        arg_order_set = true;
                        break;

                case ARG_TRIGGER: {
                        trigger_spec t = {};
                        bool bare = false;
                        char th[64], w[64], ms[64];

                        r = trigger_add(optarg, &t, &bare);
                        if (r == -ENOMEM) {
                                log_oom();
                                return -ENOMEM;
                        }
                        if (r == -ERANGE && t.threshold_usec == 0)
                                return usage_error("invalid trigger '%s': THRESHOLD is 0 (it must be above 0 and at "
                                                   "most WINDOW)", optarg);
                        /* The values as read: "100" is 100 s, which one who
                         * meant milliseconds sees (and how to write them). */
                        if (r == -ERANGE && bare && t.threshold_usec / 1000 <= t.window_usec &&
                            t.threshold_usec / 1000 > 0)
                                return usage_error("invalid trigger '%s': THRESHOLD %s is above WINDOW %s (a number "
                                                   "without a unit is seconds: for milliseconds write %s)",
                                                   optarg, format_duration(th, sizeof(th), t.threshold_usec),
                                                   format_duration(w, sizeof(w), t.window_usec),
                                                   format_duration(ms, sizeof(ms), t.threshold_usec / 1000));
                        if (r == -ERANGE)
                                return usage_error("invalid trigger '%s': THRESHOLD %s is above WINDOW %s", optarg,
                                                   format_duration(th, sizeof(th), t.threshold_usec),
                                                   format_duration(w, sizeof(w), t.window_usec));
                        if (r == -EDOM)
                                return usage_error("invalid trigger '%s': WINDOW must lie between 500ms and 10s",
                                                   optarg);
                        if (r == -EOPNOTSUPP)
                                return usage_error("invalid trigger '%s': irq pressure is full only (irq:full:...)",
                                                   optarg);
                        if (r < 0)
                                return usage_error("invalid trigger '%s' (expected RESOURCE:KIND:THRESHOLD:WINDOW "
                                                   "with RESOURCE cpu, memory, io or irq, KIND some or full, "
                                                   "e.g. memory:some:150ms:2s)", optarg);
                        break;
                }

                case ':':
                        return usage_error("option '%s' needs an argument", argv[optind - 1]);

                case '?': {
                        const char *arg = argv[optind - 1], *eq = strchr(arg, '=');

                        /* getopt names a known long option given an argument it
                         * does not take ("--no-wait=1", "--help=x") in optopt,
                         * as it does an unknown short one: then argv[optind - 1]
                         * may be the argument before ("--timeout=1s -xx"). */
                        if ((optopt >= ARG_VERSION || optopt == 'h') && startswith(arg, "--") && eq)
                                return usage_error("option '%.*s' takes no argument", (int) (eq - arg), arg);
                        return invalid_option(options, argc, argv, given);
                }

                default:
                        return usage_error("unexpected option");
                }

        return 1;
}

static const char *system_bus_address(void);

/* Whether connect(2) to the socket arg_bus names is refused for its
 * permissions (EACCES: the socket, or a directory on its path), which
 * libfreezer reports as it does a refused authentication. */
static bool socket_connect_denied(void) {
        struct sockaddr_un sa;
        socklen_t len = sizeof sa;
        char guid[WIRE_GUID_SIZE];
        const char *path = NULL;
        int fd, r;

        switch (arg_bus) {
        case BUS_PRIVATE:
                path = arg_socket;
                break;
        case BUS_ADDRESS:
                if (wire_parse_address(arg_address, &sa, &len, guid) < 0)
                        return false;
                break;
        case BUS_DEFAULT:
        case BUS_SYSTEM:
                if (wire_parse_address(system_bus_address(), &sa, &len, guid) < 0)
                        return false;
                break;
        default:
                return false;
        }
        if (path) {
                if (strlen(path) >= sizeof sa.sun_path)
                        return false;
                sa = (struct sockaddr_un) {.sun_family = AF_UNIX};
                strcpy(sa.sun_path, path);
                len = sizeof sa;
        }
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return false;
        r = connect(fd, (struct sockaddr *) &sa, len);
        r = r < 0 ? -errno : 0;
        close(fd);
        return r == -EACCES;
}

/* What a connection's failure likely means, as " (...)", or "". */
static const char *connect_hint(int r) {
        switch (r) {
        case -ETIMEDOUT:
                return " (no answer within 25 s: is freezerd stopped or stuck?)";
        case -ENOENT:
        case -ECONNREFUSED:
                return arg_bus == BUS_PRIVATE ? " (is freezerd running?)" : " (is dbus-daemon running?)";
        case -EINVAL:
        case -ENAMETOOLONG: {
                /* What is wrong with the address, where the wire tells (sd-bus
                 * says only "Invalid argument", or "File name too long"). */
                static char buf[300];
                char why[200];

                if (arg_bus != BUS_ADDRESS)
                        return "";
                if (wire_address_defect(arg_address, why, sizeof why)) {
                        snprintf(buf, sizeof buf, " (not a D-Bus address this can use: %s)", why);
                        return buf;
                }
                return r == -EINVAL ? " (not a D-Bus address this can use: e.g. "
                                      "unix:path=/run/dbus/system_bus_socket)"
                                    : "";
        }
        case -ECONNRESET: {
                /* sd-bus's word for a connection closed before it was up: the bus
                 * closes it after authentication when its policy does not let
                 * the uid in (another user's session bus), and sd-bus reports
                 * a refused tcp: connect as this too. */
                static char buf[160];
                if (arg_bus == BUS_PRIVATE || connected_private)
                        /* freezerd closes a connection past its 256th at
                         * once, and says so in its log. */
                        return " (freezerd closed it before it was up: does its log say it refuses more "
                               "connections?)";
                snprintf(buf, sizeof buf,
                         " (the bus closed the connection: does it let uid %u in? A session bus takes only "
                         "its own user%s)",
                         (unsigned) geteuid(),
                         arg_bus == BUS_ADDRESS && startswith(arg_address, "tcp:") ? "; or nothing listens there"
                                                                                   : "");
                return buf;
        }
        case -EACCES: {
                static char buf[200];

                /* connect(2) refused by the file system: said as such, not as
                 * the guid= below, which an address of a bus that is not
                 * ours to use (a directory of mode 0700) has all the same. */
                if (socket_connect_denied()) {
                        snprintf(buf, sizeof buf, " (the socket, or a directory on its path, is not open to uid %u%s)",
                                 (unsigned) geteuid(),
                                 arg_bus == BUS_PRIVATE ? ": the private socket is for root, and for the user "
                                                          "freezerd runs as; others go by the bus"
                                                        : "");
                        return buf;
                }
                /* Also what a server other than the one guid= names gets (a bus
                 * restarted since the address was taken, with a new id). */
                return arg_bus == BUS_ADDRESS && strstr(arg_address, "guid=")
                               ? " (does the address' guid= name this bus? A bus gets a new one when it restarts)"
                               : "";
        }
        case -EPROTO:
                /* The peer refused Hello, or answered in no D-Bus at all: such as
                 * freezerd's private socket given as a bus. */
                return arg_bus == BUS_ADDRESS ? " (is it a bus? freezerd's private socket is reached with --socket=PATH)"
                                              : "";
        default:
                return "";
        }
}

/* The environment variable that gives the address of the bus arg_bus
 * names, where it is set (sd-bus reads it so); NULL if none. */
static const char *bus_address_variable(void) {
        const char *name = arg_bus == BUS_USER                               ? "DBUS_SESSION_BUS_ADDRESS"
                           : arg_bus == BUS_SYSTEM || arg_bus == BUS_DEFAULT ? "DBUS_SYSTEM_BUS_ADDRESS"
                                                                             : NULL;

        return name && secure_getenv(name) ? name : NULL;
}

/* Whether the address of the bus arg_bus names (--address=, or the
 * variable) is one sd-bus skips whole: no entry of a transport it knows, or
 * a unix: one that names no socket. */
static bool address_unusable(void) {
        static const char *const transports[] = { "unix:", "tcp:", "unixexec:", "x-machine-unix:" };
        const char *a = arg_bus == BUS_ADDRESS ? arg_address
                        : bus_address_variable() ? secure_getenv(bus_address_variable())
                                                  : NULL;
        struct sockaddr_un sa;
        socklen_t len;
        char guid[WIRE_GUID_SIZE];

        if (!a)
                return false;
        if (startswith(a, "unix:") && !strchr(a, ';'))
                return wire_parse_address(a, &sa, &len, guid) == -EINVAL;
        for (const char *p = a; *p; p += strcspn(p, ";"), p += *p == ';')
                for (size_t i = 0; i < ELEMENTSOF(transports); i++)
                        if (strncmp(p, transports[i], strlen(transports[i])) == 0)
                                return false;
        return true;
}

/* Why a connection failed, in the words an operator needs: the errno's, and
 * what it likely means. */
static const char *connect_error(int r) {
        static char buf[400];

        /* sd-bus skips an entry whose transport it does not know ("foo:",
         * "unx:path=..."), or whose unix: socket is empty, and then says
         * ECONNREFUSED, as if a bus had refused us: said as the address it
         * is (the wire says EINVAL for the empty socket). */
        if (r == -ECONNREFUSED && address_unusable())
                r = -EINVAL;

        /* sd-bus has no address for the user bus: it says ENOMEDIUM ("No medium
         * found"), which libfreezer reports as ENOENT since 0.4.0; that read
         * "No such file or directory (is dbus-daemon running?)", say under
         * sudo, which drops both variables. */
        if (r == -ENOMEDIUM || (r == -ENOENT && arg_bus == BUS_USER && !getenv_set("DBUS_SESSION_BUS_ADDRESS") &&
                                !getenv_set("XDG_RUNTIME_DIR")))
                return "there is no user bus (neither DBUS_SESSION_BUS_ADDRESS nor XDG_RUNTIME_DIR is set)";
        /* The address came from the environment: "Invalid argument" named
         * nothing to fix (and sd-bus said "Connection refused" for an entry
         * without a transport, as if a bus had refused us). */
        char why[200];
        if ((r == -EINVAL || r == -ENAMETOOLONG) && bus_address_variable() &&
            wire_address_defect(secure_getenv(bus_address_variable()), why, sizeof why)) {
                snprintf(buf, sizeof buf, "%s is not a valid D-Bus address: %s", bus_address_variable(), why);
                return buf;
        }
        if (r == -EINVAL && bus_address_variable()) {
                snprintf(buf, sizeof buf,
                         "%s is not a valid D-Bus address (e.g. unix:path=%s, the default where it is unset)",
                         bus_address_variable(),
                         arg_bus == BUS_USER ? "$XDG_RUNTIME_DIR/bus" : "/run/dbus/system_bus_socket");
                return buf;
        }
        snprintf(buf, sizeof buf, "%s%s", strerror(-r), connect_hint(r));
        return buf;
}

/* The system bus' address, as sd-bus finds it. */
static const char *system_bus_address(void) {
        return secure_getenv("DBUS_SYSTEM_BUS_ADDRESS") ?: "unix:path=/run/dbus/system_bus_socket";
}

/* The user bus' address, as sd-bus finds it: DBUS_SESSION_BUS_ADDRESS, else
 * the socket "bus" in XDG_RUNTIME_DIR; "" if neither is set (connect_error()
 * says so) or the variable is empty (it says that it is no address). */
static const char *user_bus_address(void) {
        static char buf[PATH_MAX + sizeof "unix:path=/bus"];
        const char *e = secure_getenv("DBUS_SESSION_BUS_ADDRESS");

        if (e)
                return e;
        e = secure_getenv("XDG_RUNTIME_DIR");
        if (!e || !*e)
                return "";
        (void) snprintf(buf, sizeof buf, "unix:path=%s/bus", e);
        return buf;
}

/* For a user who did not reach freezerd on the system bus (r: the
 * connection's failure: no socket, refused, not open to the uid; or 0: the
 * bus has no freezerd): how to reach a freezerd elsewhere, as "; ..."; ""
 * otherwise.  A freezerd run by a user is on that user's session bus (where
 * there is one: not without DBUS_SESSION_BUS_ADDRESS and XDG_RUNTIME_DIR, as
 * connect_error() says of --user), and listens on its private socket in its
 * runtime directory ($XDG_RUNTIME_DIR/freezerd with --user; DIR/private for
 * --runtime-dir=DIR, as --help says of --socket=). */
static const char *other_buses_hint(int r) {
        static char buf[PATH_MAX + 300];
        const char *runtime = secure_getenv("XDG_RUNTIME_DIR");
        bool user_bus = getenv_set("DBUS_SESSION_BUS_ADDRESS") || getenv_set("XDG_RUNTIME_DIR");

        if (geteuid() == 0 || !(arg_bus == BUS_DEFAULT || arg_bus == BUS_SYSTEM) ||
            !(r == 0 || r == -ENOENT || r == -ECONNREFUSED || r == -EACCES || r == -ECONNRESET || r == -EPERM))
                return "";
        if (runtime && *runtime)
                (void) snprintf(buf, sizeof buf,
                                "; a freezerd run as a user is reached with --user (its session bus) or "
                                "--socket=%s/freezerd/private (its private socket), one on another bus with "
                                "--address=ADDR",
                                runtime);
        else
                (void) snprintf(buf, sizeof buf,
                                "; a freezerd run as a user is reached with %s--socket=DIR/private (its private "
                                "socket, for one started with --runtime-dir=DIR), one on another bus with "
                                "--address=ADDR",
                                user_bus ? "--user (its session bus) or " : "");
        return buf;
}

/* "cannot connect to <where arg_bus says>: <why>". */
/* why: what went wrong, or NULL for r's words (connect_error()); either way
 * with r's hint. */
static void log_connect_failure_why(const char *why, int r) {
        char buf[512];

        if (why) {
                snprintf(buf, sizeof buf, "%s%s", why, connect_hint(r));
                why = buf;
        } else
                why = connect_error(r);

        switch (arg_bus) {
        case BUS_USER:
                if (*user_bus_address())
                        log_error("cannot connect to the user bus (%s): %s", user_bus_address(), why);
                else
                        log_error("cannot connect to the user bus: %s", why);
                break;
        case BUS_ADDRESS:
                log_error("cannot connect to the bus at %s: %s", arg_address, why);
                break;
        case BUS_PRIVATE:
                log_error("cannot connect to freezerd's private socket %s: %s", arg_socket, why);
                break;
        case BUS_DEFAULT:
                if (connected_private) { /* root's, which the wire reached */
                        log_error("cannot connect to freezerd's private socket %s: %s", FREEZER_PRIVATE_SOCKET,
                                  why);
                        break;
                }
                __attribute__((fallthrough));
        case BUS_SYSTEM:
        default:
                log_error("cannot connect to the system bus (%s): %s%s", system_bus_address(), why,
                          other_buses_hint(r));
                break;
        }
}

static void log_connect_failure(int r) {
        log_connect_failure_why(NULL, r);
}

/* The wire's call was answered by the bus in place of our Hello(). */
static void log_hello_refused(const char *name, const char *message) {
        char what[256];
        const char *s;

        if (name && (s = startswith(name, "org.freedesktop.DBus.Error.")))
                name = s;
        snprintf(what, sizeof what, "it refused Hello: %s%s%s", name ?: "", name && message ? ": " : "",
                 message ?: "");
        log_connect_failure_why(what, -EPROTO);
}

static int connect_bus(freezer **ret, bool needs_signals) {
        int r;

        switch (arg_bus) {
        case BUS_USER:
                r = freezer_open_user(ret);
                break;
        case BUS_ADDRESS:
                r = freezer_open_address(ret, arg_address);
                break;
        case BUS_PRIVATE:
                r = freezer_open_private(ret, arg_socket);
                connected_private = r >= 0;
                break;
        case BUS_DEFAULT:
                /* As systemctl does with /run/systemd/private: root's one-shot
                 * calls skip dbus-daemon.  Any failure there (no daemon
                 * listening, an old one without the socket) leaves the bus,
                 * which then has its say. */
                if (!needs_signals && geteuid() == 0 && freezer_open_private(ret, NULL) >= 0) {
                        connected_private = true;
                        return 0;
                }
                __attribute__((fallthrough));
        case BUS_SYSTEM:
        default:
                r = freezer_open_system(ret);
                break;
        }
        if (r < 0)
                log_connect_failure(r);
        return r;
}

static int run_verb(freezer *f, const verb *v, char **args, size_t n_args, const freezer_request *requests,
                    size_t n_requests) {
        if (streq(v->name, "freeze") && n_arg_except > 0)
                return verb_freeze_except(f, args[0]);
        if (streq(v->name, "freeze"))
                return verb_freeze_thaw(&(caller) {.f = f}, true, args, n_args);
        if (streq(v->name, "thaw"))
                return verb_freeze_thaw(&(caller) {.f = f}, false, args, n_args);
        if (streq(v->name, "batch"))
                return verb_batch(&(caller) {.f = f}, args[0], requests, n_requests);
        if (streq(v->name, "status"))
                return verb_status(f, args, n_args);
        if (streq(v->name, "list"))
                return verb_list(f);
        if (streq(v->name, "pressure"))
                return verb_pressure(f, args, n_args);
        if (streq(v->name, "watch"))
                return verb_watch(f, args, n_args);
        if (streq(v->name, "track") || streq(v->name, "untrack"))
                return verb_track(f, streq(v->name, "track"), args, n_args);
        return verb_tree(f, args, n_args);
}

/* freeze, thaw and batch go by the wire (bus-wire.h), which spares loading
 * libsystemd, over the private socket and over a bus the wire reaches (the
 * system bus, --address=unix:...); freeze --except and thaw --recursive
 * (which looks groups up after, frozen_by(), with --no-wait too) go
 * through libfreezer, as does everything else. */
static bool wire_freeze(const verb *v) {
        return streq(v->name, "freeze") && n_arg_except == 0;
}

static bool wire_thaw(const verb *v) {
        return streq(v->name, "thaw") && !arg_recursive;
}

/* The bus the wire would take after the private socket; NULL for the user
 * bus, which libsystemd finds (DBUS_SESSION_BUS_ADDRESS, XDG_RUNTIME_DIR). */
static const char *wire_bus_address(void) {
        switch (arg_bus) {
        case BUS_ADDRESS:
                return arg_address;
        case BUS_DEFAULT:
        case BUS_SYSTEM:
                return system_bus_address();
        default:
                return NULL;
        }
}

#if FREEZECTL_FRONT
/* What the static front does itself (front.h): freeze and thaw by the wire,
 * without --json (json-c). */
static bool front_serves(const verb *v) {
        return (wire_freeze(v) || wire_thaw(v)) && !arg_json && (arg_bus == BUS_PRIVATE || wire_bus_address());
}
#endif

/* Where the wire cannot go: libfreezer's to do (-1), or in the static front
 * freezectl-dynamic's, before anything was sent. */
static int wire_unreachable(void) {
#if FREEZECTL_FRONT
        front_exec_dynamic("a bus that is not on a unix socket"); /* the user bus never comes here */
        return EXIT_FAILURE;
#else
        return -1;
#endif
}

/* The command's exit status, or -1 to go on through libfreezer. */
static int run_by_wire(const verb *v, char **args, size_t n_args, const freezer_request *requests,
                       size_t n_requests) {
        bool freeze = wire_freeze(v), thaw = wire_thaw(v), batch = streq(v->name, "batch");
        bool bus_fallback = false;
        const char *address;
        wire *w = NULL;
        int ret, r;

        if (!freeze && !thaw && !batch)
                return -1;

        if (arg_bus == BUS_PRIVATE || (arg_bus == BUS_DEFAULT && geteuid() == 0)) {
                r = wire_open(arg_bus == BUS_PRIVATE ? arg_socket : FREEZER_PRIVATE_SOCKET, &w);
                connected_private = r >= 0;
                if (r < 0 && arg_bus == BUS_PRIVATE) {
                        log_connect_failure(r);
                        return EXIT_FAILURE;
                }
                if (r < 0)
                        /* As connect_bus(): no freezerd listening there leaves
                         * the system bus to have its say. */
                        arg_bus = BUS_SYSTEM;
                else
                        bus_fallback = arg_bus == BUS_DEFAULT;
        }
again:
        if (!w) {
                address = wire_bus_address();
                if (!address)
                        return wire_unreachable();
                r = wire_open_bus(address, FREEZER_SERVICE, &w);
                if (r == -EAFNOSUPPORT)
                        return wire_unreachable();
                if (r < 0) {
                        log_connect_failure(r);
                        return EXIT_FAILURE;
                }
        }

        if (batch)
                ret = verb_batch(&(caller) {.w = w, .bus_fallback = bus_fallback}, args[0], requests, n_requests);
        else
                ret = verb_freeze_thaw(&(caller) {.w = w, .bus_fallback = bus_fallback}, freeze, args, n_args);
        wire_close(w);
        if (ret == EXIT_RETRY_ON_BUS) {
                w = NULL;
                connected_private = bus_fallback = false;
                arg_bus = BUS_SYSTEM;
                goto again;
        }
        return ret;
}

static int run(int argc, char *argv[]) {
        freezer_request *requests = NULL;
        size_t n_requests = 0;
        const verb *v = NULL;
        const char *unwanted;
        unsigned option = 0;
        freezer *f = NULL;
        char **args;
        size_t n_args;
        int ret, r;

        r = parse_argv(argc, argv);
        if (r < 0)
                return EXIT_USAGE;
        if (r == 0)
                return stdout_flushed() ? EXIT_SUCCESS : EXIT_FAILURE; /* --help, --version */

        if (optind >= argc) {
                usage_error("missing command");
                return EXIT_USAGE;
        }

        if (streq(argv[optind], "help")) {
                if (argc - optind > 2) {
                        usage_error("help takes at most one COMMAND");
                        return EXIT_USAGE;
                }
                if (optind + 1 < argc)
                        ret = help_command(argv[optind + 1]);
                else {
                        help();
                        ret = EXIT_SUCCESS;
                }
                if (!stdout_flushed())
                        return EXIT_FAILURE;
                return ret;
        }

        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(argv[optind], verbs[i].name)) {
                        v = &verbs[i];
                        break;
                }
        if (!v) {
                usage_error("unknown command '%s'", argv[optind]);
                return EXIT_USAGE;
        }

        args = argv + optind + 1;
        n_args = (size_t) (argc - optind - 1);

        if (n_args < v->min_args) {
                if (v->max_args == 1)
                        usage_error("%s needs a %s%s", v->name, v->arg_name,
                                    streq(v->name, "batch") ? " (\"-\" for standard input)" : "");
                else
                        usage_error("%s needs at least one %s", v->name, v->arg_name);
                return EXIT_USAGE;
        }
        if (n_args > v->max_args) {
                if (v->max_args == 0)
                        usage_error("%s takes no arguments", v->name);
                else if (v->min_args == 1)
                        usage_error("%s takes exactly one %s", v->name, v->arg_name);
                else
                        usage_error("%s takes at most one %s", v->name, v->arg_name);
                return EXIT_USAGE;
        }

        if (!FREEZECTL_FRONT && verb_needs_locale(v)) /* the front does no such command itself */
                (void) setlocale(LC_ALL, "");

        unwanted = verb_unwanted_option(v, &option);
        if (unwanted) {
                usage_error("%s applies only to %s", unwanted, verbs_taking(option));
                return EXIT_USAGE;
        }

        /* freezerd's refusal speaks of its Manager object, which means nothing here. */
        for (size_t i = 0; streq(v->name, "watch") && n_args > 0 && i < n_arg_triggers; i++)
                if (arg_triggers[i].resource == FREEZER_RESOURCE_IRQ) {
                        usage_error("irq pressure is system-wide: give --trigger=irq:... to a watch without PATH");
                        return EXIT_USAGE;
                }

        /* The timeout is how long freezerd waits for the kernel: with --no-wait
         * it does not wait, and the timeout would be ignored in silence.
         * (--rollback still means something there: a batch's failed write.) */
        if (arg_no_wait && arg_timeout_set) {
                usage_error("--timeout= is how long freezerd waits for the kernel: not with --no-wait");
                return EXIT_USAGE;
        }
        /* Likewise --rollback of one group's freeze or thaw: nothing waits to
         * time out, and a failed write leaves nothing to restore.  A batch
         * (batch, --recursive, --except) still restores its flags after a
         * failed write. */
        if (arg_no_wait && arg_rollback && !streq(v->name, "batch") && !arg_recursive && n_arg_except == 0) {
                usage_error("--rollback restores the flags on a timeout, which --no-wait does not wait for: with "
                            "--no-wait only for batches (batch, --recursive, --except), whose failed writes it "
                            "undoes");
                return EXIT_USAGE;
        }

        if (n_arg_except > 0) {
                if (n_args != 1) {
                        usage_error("freeze --except takes exactly one PATH");
                        return EXIT_USAGE;
                }
                if (arg_recursive) {
                        usage_error("--recursive cannot be combined with --except");
                        return EXIT_USAGE;
                }
                ret = check_except_below(args[0]);
                if (ret != EXIT_SUCCESS)
                        return ret;
        }

        for (size_t i = 0; i < n_args; i++)
                if (!*args[i]) {
                        /* Which one, where several were given ("freeze /a \"$B\"" with B unset). */
                        size_t k = i + 1;
                        const char *th = k % 100 / 10 == 1 ? "th" : k % 10 == 1 ? "st" : k % 10 == 2 ? "nd"
                                                                  : k % 10 == 3 ? "rd" : "th";

                        if (n_args > 1)
                                usage_error("empty %s: the %zu%s of the %zu given", v->arg_name, k, th, n_args);
                        else
                                usage_error("empty %s", v->arg_name);
                        return EXIT_USAGE;
                }

#if FREEZECTL_FRONT
        if (!front_serves(v)) {
                char why[64];

                snprintf(why, sizeof why, "'%s'%s", v->name, arg_json ? " with --json" : "");
                front_exec_dynamic(why);
                return EXIT_FAILURE;
        }
#endif

        /* Check the batch before talking to anyone. */
        if (streq(v->name, "batch")) {
                ret = batch_load(args[0], &requests, &n_requests);
                if (ret != EXIT_SUCCESS)
                        return ret;
        }

        /* The PATHs a NoSuchGroup may be about, for its hint (freeze, thaw
         * and track set theirs path by path). */
        call_path = n_args > 0 && !streq(v->name, "batch") ? args[0] : NULL;
        call_requests = requests;
        n_call_requests = n_requests;

        ret = run_by_wire(v, args, n_args, requests, n_requests);
        if (ret < 0) {
                if (connect_bus(&f, streq(v->name, "watch")) < 0) {
                        batch_json_free(requests);
                        return EXIT_FAILURE;
                }
                ret = run_verb(f, v, args, n_args, requests, n_requests);
                freezer_close(f);
        }
        batch_json_free(requests);

        if (!stdout_flushed())
                return EXIT_FAILURE;

        return ret;
}

int main(int argc, char *argv[]) {
        int ret;

#if FREEZECTL_FRONT
        front_save_argv(argc, argv);
#endif
        ret = run(argc, argv);

        for (size_t i = 0; i < n_arg_except; i++)
                free(arg_except_norm[i]);
        free(arg_except_norm);
        free(arg_except);
        free(arg_triggers);
        return ret;
}
