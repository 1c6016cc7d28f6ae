// SPDX-License-Identifier: GPL-2.0
/*
 * The guest workload of 'make demo': a user program, built with frame
 * pointers, whose time splits between its own code and the guest kernel
 * (system calls on a pipe, page faults on fresh memory), with a call
 * structure that is easy to recognise in a flame graph:
 *
 *   main -> run_workload -> compute_phase -> checksum_block -> mix_word
 *                        -> pipe_phase    -> pipe_ping      -> write/read
 *                        -> fault_phase   -> touch_pages    -> (page faults)
 *
 * Usage: workload SECONDS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define noinline __attribute__((noinline))

static volatile uint64_t sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

noinline uint64_t mix_word(uint64_t h, uint64_t w)
{
	h ^= w + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

noinline uint64_t checksum_block(const uint64_t *block, size_t n)
{
	uint64_t h = 0;
	size_t i;

	for (i = 0; i < n; i++)
		h = mix_word(h, block[i]);
	return h;
}

noinline void compute_phase(uint64_t *block, size_t n)
{
	int i;

	for (i = 0; i < 256; i++)
		sink += checksum_block(block, n);
}

noinline void pipe_ping(int fds[2], char *buf, size_t len)
{
	if (write(fds[1], buf, len) != (ssize_t)len || read(fds[0], buf, len) != (ssize_t)len) {
		perror("pipe");
		exit(1);
	}
}

noinline void pipe_phase(int fds[2])
{
	char buf[4096];
	int i;

	memset(buf, 0x5a, sizeof(buf));
	for (i = 0; i < 256; i++)
		pipe_ping(fds, buf, sizeof(buf));
}

noinline void touch_pages(char *mem, size_t len)
{
	size_t i;

	for (i = 0; i < len; i += 4096)
		mem[i] = (char)i;
}

noinline void fault_phase(void)
{
	size_t len = 1 << 20;
	char *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	touch_pages(mem, len);
	munmap(mem, len);
}

noinline unsigned long run_workload(double seconds)
{
	static uint64_t block[2048];
	double end = now() + seconds;
	unsigned long rounds = 0;
	int fds[2];
	size_t i;

	for (i = 0; i < 2048; i++)
		block[i] = i * 0x100000001b3ull;
	if (pipe(fds)) {
		perror("pipe");
		exit(1);
	}
	while (now() < end) {
		compute_phase(block, 2048);
		pipe_phase(fds);
		fault_phase();
		rounds++;
	}
	return rounds;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;

	printf("workload: %lu rounds\n", run_workload(seconds));
	return 0;
}
