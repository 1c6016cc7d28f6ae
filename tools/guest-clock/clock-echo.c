// SPDX-License-Identifier: GPL-2.0
/*
 * The guest half of guest-clock-offset, on a virtio serial port:
 *   'c'  answer this machine's CLOCK_MONOTONIC in nanoseconds, a decimal
 *        line (guest-clock-offset ping);
 *   'x'  take READINGS readings, each the clock just before and just after
 *        a CPUID of leaf CPUID_LEAF with a sequence number as its subleaf:
 *        CPUID always exits to the hypervisor, and the host's perf records
 *        KVM's handling of it (kvm:kvm_cpuid) with the host's time; answer
 *        "SEQ BEFORE AFTER" a line each, then "." (guest-clock-offset
 *        cpuid).  Any user may run CPUID; x86 only;
 *   'q'  stop.
 * Reading the port gives end of file while the host's side is not
 * connected: wait for the host then.
 *
 *   clock-echo /dev/vport0p2
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

/* "PERF": a leaf no CPU defines; KVM answers it without changing anything. */
#define CPUID_LEAF 0x50455246
#define READINGS 20

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int answer(int fd, const char *line, int n)
{
	return write(fd, line, n) == n ? 0 : -1;
}

/* 'x': the readings around CPUIDs, or why there are none. */
static int exit_readings(int fd, unsigned int *seq)
{
	char line[80];
	int i, n;

#if defined(__x86_64__) || defined(__i386__)
	for (i = 0; i < READINGS; i++) {
		unsigned int eax, ebx, ecx, edx;
		long long before, after;

		before = now_ns();
		__cpuid_count(CPUID_LEAF, ++*seq, eax, ebx, ecx, edx);
		after = now_ns();
		n = snprintf(line, sizeof(line), "%u %lld %lld\n", *seq, before, after);
		if (answer(fd, line, n))
			return -1;
	}
	return answer(fd, ".\n", 2);
#else
	(void)seq;
	(void)i;
	n = snprintf(line, sizeof(line), "error no CPUID on this architecture\n");
	return answer(fd, line, n);
#endif
}

int main(int argc, char **argv)
{
	unsigned int seq = 0;
	char c, line[32];
	int fd, n;

	if (argc != 2) {
		fprintf(stderr, "usage: %s PORT\n", argv[0]);
		return 2;
	}
	fd = open(argv[1], O_RDWR);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	for (;;) {
		n = read(fd, &c, 1);
		if (n == 0 || (n < 0 && errno == EINTR)) {
			usleep(10000);
			continue;
		}
		if (n < 0) {
			perror(argv[1]);
			return 1;
		}
		if (c == 'q')
			break;
		if (c == 'x') {
			if (exit_readings(fd, &seq))
				return 1;
			continue;
		}
		if (c != 'c')
			continue;
		n = snprintf(line, sizeof(line), "%lld\n", now_ns());
		if (answer(fd, line, n))
			return 1;
	}
	return 0;
}
