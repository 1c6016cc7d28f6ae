// SPDX-License-Identifier: GPL-2.0
/*
 * An LD_PRELOAD shim that makes KVM answer KVM_CHECK_EXTENSION for
 * KVM_CAP_GUEST_CALLCHAINS as another host would, so that a VMM's
 * refusals can be tested on the series' kernel (tests/l1/qemu-test.sh):
 *
 *   KVM_OFFERS_CAP     the capability's number (from the kernel's uapi)
 *   KVM_OFFERS_SYSTEM  the answer on /dev/kvm: 0 is a kernel without it
 *   KVM_OFFERS_VM      the answer on a VM: 0 is a confidential VM, 1 a
 *                      kernel that offers call chains but not the stack
 *
 * Either left unset gives KVM's own answer.  KVM_ENABLE_CAP of a level
 * above what the shim says is refused with EINVAL, as KVM refuses it; the
 * rest goes to KVM.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/kvm.h>

typedef int (*ioctl_fn)(int, unsigned long, ...);

static long setting(const char *name)
{
	const char *value = getenv(name);

	return value && *value ? strtol(value, NULL, 0) : -1;
}

/* Whether @fd is /dev/kvm itself rather than a VM or a vCPU. */
static int is_system_fd(int fd)
{
	char link[64], target[PATH_MAX];
	ssize_t len;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	len = readlink(link, target, sizeof(target) - 1);
	if (len < 0)
		return 0;
	target[len] = '\0';
	return strcmp(target, "/dev/kvm") == 0;
}

int ioctl(int fd, unsigned long request, ...)
{
	static ioctl_fn real;
	long cap = setting("KVM_OFFERS_CAP");
	long answer;
	va_list ap;
	void *arg;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!real)
		real = (ioctl_fn)dlsym(RTLD_NEXT, "ioctl");
	if (cap < 0)
		return real(fd, request, arg);

	if (request == KVM_CHECK_EXTENSION && (long)arg == cap) {
		answer = setting(is_system_fd(fd) ? "KVM_OFFERS_SYSTEM" : "KVM_OFFERS_VM");
		if (answer >= 0)
			return answer;
	}
	if (request == KVM_ENABLE_CAP && !is_system_fd(fd)) {
		const struct kvm_enable_cap *enable = arg;

		answer = setting("KVM_OFFERS_VM");
		if (enable->cap == cap && answer >= 0 &&
		    enable->args[0] > (unsigned long)answer) {
			errno = EINVAL;
			return -1;
		}
	}
	return real(fd, request, arg);
}
