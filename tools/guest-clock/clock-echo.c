// SPDX-License-Identifier: GPL-2.0
/*
 * The guest half of guest-clock-offset: on a virtio serial port, answer
 * each 'c' read with this machine's CLOCK_MONOTONIC in nanoseconds, as a
 * decimal line; stop at 'q'.  Reading the port gives end of file while
 * the host's side is not connected: wait for the host then.
 *
 *   clock-echo /dev/vport0p2
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec ts;
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
		if (c != 'c')
			continue;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		n = snprintf(line, sizeof(line), "%lld\n",
			     (long long)ts.tv_sec * 1000000000 + ts.tv_nsec);
		if (write(fd, line, n) != n)
			return 1;
	}
	return 0;
}
