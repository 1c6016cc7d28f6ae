// SPDX-License-Identifier: GPL-2.0-only
/*
 * The benchmark's host clock, run on the host (not in L1) beside QEMU while
 * L1 runs guest_callchain_bench: QEMU's vCPU thread's CPU time against the
 * host's TSC, every millisecond, and the host's TSC whenever L1 rewrites
 * DIR/sync (with L1's TSC in it).  Written to DIR/hostclock.csv and
 * DIR/sync.csv when QEMU is gone; bench/report.py turns the phases of each
 * run into CPU time QEMU really had.
 *
 *   host_clock QEMU_PID DIR
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

/* Grows by doubling: pairs of 64-bit values. */
struct pairs {
	uint64_t *v;
	size_t nr, cap;
};

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	asm volatile("rdtsc" : "=a" (lo), "=d" (hi));
	return ((uint64_t)hi << 32) | lo;
}

static void append(struct pairs *p, uint64_t a, uint64_t b)
{
	if (p->nr == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 4096;
		p->v = realloc(p->v, p->cap * 2 * sizeof(uint64_t));
		if (!p->v)
			die("realloc");
	}
	p->v[2 * p->nr] = a;
	p->v[2 * p->nr + 1] = b;
	p->nr++;
}

/* A thread's CPU time in ns: the first field of its schedstat. */
static uint64_t thread_runtime(int fd)
{
	char text[128];
	ssize_t len = pread(fd, text, sizeof(text) - 1, 0);

	if (len <= 0)
		return 0;
	text[len] = 0;
	return strtoull(text, NULL, 10);
}

static uint64_t runtime_of(pid_t pid, const char *tid)
{
	char path[512];
	uint64_t rt;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", pid, tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	rt = thread_runtime(fd);
	close(fd);
	return rt;
}

/*
 * QEMU's vCPU thread (one, -accel tcg,thread=single) is the one that ran
 * the most, once one has run for 3 s.  Returns 0 when QEMU is gone.
 */
static pid_t find_vcpu_thread(pid_t pid)
{
	char dir[64];

	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	for (;;) {
		uint64_t best = 0, rt;
		pid_t tid = 0;
		struct dirent *d;
		DIR *tasks = opendir(dir);

		if (!tasks)
			return 0;
		while ((d = readdir(tasks))) {
			if (d->d_name[0] == '.')
				continue;
			rt = runtime_of(pid, d->d_name);
			if (rt > best) {
				best = rt;
				tid = atoi(d->d_name);
			}
		}
		closedir(tasks);
		if (best >= 3000000000ull)
			return tid;
		usleep(200000);
	}
}

/* L1 rewrote DIR/sync: note our TSC against the L1 TSC written there. */
static void read_sync(int ino, const char *sync_file, uint64_t *last, struct pairs *sync)
{
	uint64_t tsc = rdtsc(), l1_tsc;
	char events[4096], text[64] = "";
	ssize_t len;
	int fd;

	while (read(ino, events, sizeof(events)) > 0)
		;
	fd = open(sync_file, O_RDONLY);
	if (fd >= 0) {
		len = read(fd, text, sizeof(text) - 1);
		close(fd);
		text[len > 0 ? len : 0] = 0;
	}
	l1_tsc = strtoull(text, NULL, 10);
	if (l1_tsc && l1_tsc != *last) {
		*last = l1_tsc;
		append(sync, l1_tsc, tsc);
	}
}

static void write_csv(const char *dir, const char *name, const char *header,
		      const struct pairs *p)
{
	char path[4096];
	size_t i;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		die(path);
	fprintf(f, "%s\n", header);
	for (i = 0; i < p->nr; i++)
		fprintf(f, "%lu,%lu\n", p->v[2 * i], p->v[2 * i + 1]);
	fclose(f);
}

int main(int argc, char *argv[])
{
	/* Room for 17 minutes of milliseconds: no realloc() while sampling. */
	struct pairs clock = { .cap = 1 << 20 }, sync = {};
	char path[256], sync_file[4096];
	uint64_t last_sync = 0;
	pid_t pid, tid;
	int fd, ino;

	if (argc != 3) {
		fprintf(stderr, "usage: %s QEMU_PID DIR\n", argv[0]);
		return 2;
	}
	clock.v = malloc(clock.cap * 2 * sizeof(uint64_t));
	if (!clock.v)
		die("malloc");
	pid = atoi(argv[1]);
	snprintf(sync_file, sizeof(sync_file), "%s/sync", argv[2]);
	ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (ino < 0 || inotify_add_watch(ino, argv[2], IN_MODIFY | IN_CLOSE_WRITE) < 0)
		die(argv[2]);

	tid = find_vcpu_thread(pid);
	if (!tid)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", pid, tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		die(path);
	printf("host-clock: QEMU %d, vCPU thread %d\n", pid, tid);
	fflush(stdout);

	for (;;) {
		struct pollfd pfd = { .fd = ino, .events = POLLIN };
		uint64_t tsc, rt;

		if (poll(&pfd, 1, 1) > 0)
			read_sync(ino, sync_file, &last_sync, &sync);
		tsc = rdtsc();
		rt = thread_runtime(fd);
		if (!rt && kill(pid, 0))
			break;
		append(&clock, tsc, rt);
	}

	write_csv(argv[2], "hostclock.csv", "host_tsc,vcpu_thread_ns", &clock);
	write_csv(argv[2], "sync.csv", "l1_tsc,host_tsc", &sync);
	printf("host-clock: %zu samples, %zu sync marks\n", clock.nr, sync.nr);
	return 0;
}
