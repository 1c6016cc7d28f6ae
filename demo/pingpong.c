// SPDX-License-Identifier: GPL-2.0
/*
 * Two of the demo's guest programs, built from this file twice: 'ping'
 * (-DPLAYER=ping) and 'pong' (-DPLAYER=pong).  ping starts pong and they
 * pass a token back and forth over two pipes; whoever holds it computes
 * for a while in its own functions, then passes it on and waits.  Each
 * pass switches the guest from one address space to the other inside the
 * guest, without an exit to the host:
 *
 *   main -> ping_rally -> ping_volley -> ping_stroke
 *   main -> pong_rally -> pong_volley -> pong_stroke
 *
 * Usage: ping SECONDS     (runs 'pong' from the same directory)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef PLAYER
#error "build with -DPLAYER=ping or -DPLAYER=pong"
#endif
#define CAT(a, b) a##_##b
#define XCAT(a, b) CAT(a, b)
#define NAME(x) XCAT(PLAYER, x)
#define STR(x) #x
#define XSTR(x) STR(x)

#define noinline __attribute__((noinline))

/* How long a player computes while it holds the token. */
#define TURN_NS 40000000ull

static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

noinline uint64_t NAME(stroke)(uint64_t h, uint64_t i)
{
	h ^= i * 0x9e3779b97f4a7c15ull;
	return (h << 7 | h >> 57) * 0xc2b2ae3d27d4eb4full;
}

noinline void NAME(volley)(void)
{
	uint64_t end = now_ns() + TURN_NS, h = 0, i = 0;

	do {
		for (int j = 0; j < 4096; j++, i++)
			h = NAME(stroke)(h, i);
	} while (now_ns() < end);
	sink += h;
}

noinline unsigned long NAME(rally)(int in, int out, uint64_t end)
{
	unsigned long turns = 0;
	char token = 't';

	while (now_ns() < end) {
		if (read(in, &token, 1) != 1)
			break;
		NAME(volley)();
		turns++;
		if (write(out, &token, 1) != 1)
			break;
	}
	return turns;
}

int main(int argc, char **argv)
{
	uint64_t seconds = argc > 1 ? strtoull(argv[1], NULL, 0) : 10;
	uint64_t end = now_ns() + seconds * 1000000000ull;
	int in, out;

	if (!strcmp(XSTR(PLAYER), "ping")) {
		int to_pong[2], to_ping[2];
		char path[4096], arg[3][24];
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 16);

		if (n < 0 || pipe(to_pong) || pipe(to_ping)) {
			perror("ping");
			return 1;
		}
		path[n] = 0;
		strcpy(strrchr(path, '/') + 1, "pong");
		if (!fork()) {
			snprintf(arg[0], sizeof(arg[0]), "%d", to_pong[0]);
			snprintf(arg[1], sizeof(arg[1]), "%d", to_ping[1]);
			snprintf(arg[2], sizeof(arg[2]), "%llu", (unsigned long long)seconds);
			execl(path, "pong", arg[2], arg[0], arg[1], (char *)NULL);
			perror("pong");
			_exit(1);
		}
		in = to_ping[0];
		out = to_pong[1];
		/* Serve first. */
		if (write(out, "t", 1) != 1)
			return 1;
	} else {
		if (argc < 4)
			return 1;
		in = atoi(argv[2]);
		out = atoi(argv[3]);
	}
	printf(XSTR(PLAYER) ": %lu turns\n", NAME(rally)(in, out, end));
	return 0;
}
