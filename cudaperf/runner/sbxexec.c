/* sbxexec: the sandbox's exec launcher.
 *
 * The harness is a multi-threaded Python process. Running Python code between fork() and exec()
 * (a subprocess preexec_fn, or os.fork()) can deadlock the child on a lock another thread held at
 * fork time, and a child stuck before exec keeps copies of the parent's file descriptors (such as
 * the GPU timing lock). So the parent only ever spawns this small program with subprocess's
 * C-level fork/exec, and everything that used to run in the child happens here, in C, in this
 * order, before exec'ing the real command:
 *
 *   sbxexec [--setsid] [--netns] [--rlimit NAME=SOFT:HARD]... [--dup FROM:TO]... [--uid UID] -- PROG ARG...
 *   sbxexec --kill-uid UID          setuid(UID) then kill(-1, SIGKILL): every process of UID dies
 *   sbxexec --sweep SID UID MARKER  kill every process of UID (as --kill-uid, when UID > 0 and we
 *                                   are root), then print "pid state ppid pgrp sid uid" for every
 *                                   process in session or group SID, owned by UID (-1: none), or
 *                                   whose environment holds MARKER ("-": none); zombies included
 *
 * --sweep is the /proc scan of a run's cleanup. Done in Python it is hundreds of small reads, each
 * giving up the interpreter lock, and with a dozen busy threads every one of them waits its turn
 * again: a scan that takes a millisecond here took a large share of the harness's time there.
 *
 * NAME is one of cpu, as, fsize, nofile, core, nproc. --dup moves a descriptor to a fixed number
 * and closes the original. --netns (root only) gives the command a fresh network namespace with
 * only a downed loopback. --uid (root only) drops supplementary groups, gid and uid, last.
 * Any failure exits with status 126 and a one-line message on stderr, before PROG starts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what, const char *arg) {
    fprintf(stderr, "sbxexec: %s %s: %s\n", what, arg ? arg : "", strerror(errno));
    _exit(126);
}

static int resource_of(const char *name) {
    if (!strcmp(name, "cpu")) return RLIMIT_CPU;
    if (!strcmp(name, "as")) return RLIMIT_AS;
    if (!strcmp(name, "fsize")) return RLIMIT_FSIZE;
    if (!strcmp(name, "nofile")) return RLIMIT_NOFILE;
    if (!strcmp(name, "core")) return RLIMIT_CORE;
    if (!strcmp(name, "nproc")) return RLIMIT_NPROC;
    return -1;
}

static long parse_long(const char *s, const char *what) {
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end) { errno = EINVAL; die(what, s); }
    return v;
}

static void drop_to(long uid) {
    if (setgroups(0, NULL) != 0) die("setgroups", NULL);
    if (setgid((gid_t)uid) != 0) die("setgid", NULL);
    if (setuid((uid_t)uid) != 0) die("setuid", NULL);
}

/* Whether /proc/<pid>/environ contains marker (a NUL-separated list: search entry by entry). */
static int has_marker(int dfd, const char *marker) {
    int fd = openat(dfd, "environ", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    static char buf[1 << 16];
    size_t len = 0, mlen = strlen(marker);
    ssize_t n;
    while (len < sizeof buf - 1 && (n = read(fd, buf + len, sizeof buf - 1 - len)) > 0) len += (size_t)n;
    close(fd);
    buf[len] = 0;
    for (size_t at = 0; at < len; at += strlen(buf + at) + 1)
        if (!strncmp(buf + at, marker, mlen) && (buf[at + mlen] == 0)) return 1;
    return 0;
}

/* As UID, signal every process of UID; never returns. Linux never signals the caller with -1. */
static void kill_all_as(long uid) {
    drop_to(uid);
    kill(-1, SIGKILL);
    _exit(0);
}

static int sweep(long sid, long uid, const char *marker) {
    if (uid > 0 && geteuid() == 0) {
        pid_t k = fork();
        if (k == 0) kill_all_as(uid);
        if (k > 0) while (waitpid(k, NULL, 0) < 0 && errno == EINTR) {}
    }
    DIR *proc = opendir("/proc");
    if (!proc) die("opendir", "/proc");
    pid_t self = getpid();
    struct dirent *e;
    while ((e = readdir(proc))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 1 || pid == self) continue;
        int dfd = openat(dirfd(proc), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) continue;
        struct stat st;
        char buf[1024];
        ssize_t n = -1;
        int fd = openat(dfd, "stat", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) { n = read(fd, buf, sizeof buf - 1); close(fd); }
        if (n <= 0 || fstat(dfd, &st) != 0) { close(dfd); continue; }
        buf[n] = 0;
        char *rp = strrchr(buf, ')'), state;  /* the command name may hold spaces and ')' */
        long ppid, pgrp, psid;
        if (!rp || sscanf(rp + 2, "%c %ld %ld %ld", &state, &ppid, &pgrp, &psid) != 4) { close(dfd); continue; }
        int match = psid == sid || pgrp == sid || (uid >= 0 && (long)st.st_uid == uid) ||
                    (strcmp(marker, "-") && has_marker(dfd, marker));
        close(dfd);
        if (match) printf("%ld %c %ld %ld %ld %ld\n", pid, state, ppid, pgrp, psid, (long)st.st_uid);
    }
    closedir(proc);
    return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    long uid = -1;
    int i = 1;
    if (argc == 5 && !strcmp(argv[1], "--sweep"))
        return sweep(parse_long(argv[2], "--sweep"), parse_long(argv[3], "--sweep"), argv[4]);
    if (argc == 3 && !strcmp(argv[1], "--kill-uid")) {
        long victim = parse_long(argv[2], "--kill-uid");
        if (victim <= 0) { errno = EINVAL; die("--kill-uid", argv[2]); }
        kill_all_as(victim);
    }
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) { i++; break; }
        if (!strcmp(a, "--setsid")) {
            if (setsid() < 0) die("setsid", NULL);
        } else if (!strcmp(a, "--netns")) {
            if (geteuid() == 0 && unshare(CLONE_NEWNET) != 0) die("unshare", "CLONE_NEWNET");
        } else if (!strcmp(a, "--rlimit") && i + 1 < argc) {
            char name[16];
            const char *spec = argv[++i], *eq = strchr(spec, '=');
            if (!eq || eq - spec >= (long)sizeof name) { errno = EINVAL; die("--rlimit", spec); }
            memcpy(name, spec, eq - spec);
            name[eq - spec] = 0;
            int r = resource_of(name);
            if (r < 0) { errno = EINVAL; die("--rlimit", spec); }
            char buf[64];
            snprintf(buf, sizeof buf, "%s", eq + 1);
            char *colon = strchr(buf, ':');
            if (!colon) { errno = EINVAL; die("--rlimit", spec); }
            *colon = 0;
            struct rlimit rl = {(rlim_t)parse_long(buf, "--rlimit"), (rlim_t)parse_long(colon + 1, "--rlimit")};
            if (setrlimit(r, &rl) != 0) die("setrlimit", spec);
        } else if (!strcmp(a, "--dup") && i + 1 < argc) {
            const char *spec = argv[++i], *colon = strchr(spec, ':');
            if (!colon) { errno = EINVAL; die("--dup", spec); }
            char from_s[32];
            snprintf(from_s, sizeof from_s, "%.*s", (int)(colon - spec), spec);
            int from = (int)parse_long(from_s, "--dup"), to = (int)parse_long(colon + 1, "--dup");
            if (dup2(from, to) < 0) die("dup2", spec);
            if (from != to) close(from);
        } else if (!strcmp(a, "--uid") && i + 1 < argc) {
            uid = parse_long(argv[++i], "--uid");
        } else {
            errno = EINVAL;
            die("unknown option", a);
        }
    }
    if (i >= argc) { errno = EINVAL; die("no command after --", NULL); }
    if (uid >= 0 && geteuid() == 0) drop_to(uid);
    execvp(argv[i], argv + i);
    die("exec", argv[i]);
    return 126;
}
