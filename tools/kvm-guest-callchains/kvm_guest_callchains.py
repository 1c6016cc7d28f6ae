#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
#
# kvm_guest_callchains.py - opt a running VM in to guest call chains in host
# perf samples, under a VMM that doesn't know how.
#
# The VM's opt-in is KVM_CAP_GUEST_CALLCHAINS (Documentation/virt/kvm/
# guest-callchains.rst), a VM ioctl, which KVM takes from the VMM's own
# process only: the VMM should issue it when it sets the VM up.  This is the
# stop-gap for VMMs that don't, kept out of the kernel series on purpose (the
# kernel's maintainers don't take a tool that seizes a VMM's thread).  It
# makes the VMM issue the ioctl, as gdb's "call" and reptyr make
# a process run a system call: it seizes one VMM thread that is not running a
# vCPU with ptrace(), stops it, has it run ioctl(vmfd, KVM_ENABLE_CAP, &cap)
# with the argument on its own stack, puts back its registers and stack, and
# lets it go on with what it was doing.  That needs ptrace rights over the
# VMM, which already give read access to all of the guest's memory.
# x86-64 only.
"""Opt a running VM in to guest call chains in host perf samples."""

import argparse
import ctypes
import errno
import fcntl
import glob
import os
import platform
import signal
import struct
import sys

KVMIO = 0xAE
KVM_CAP_GUEST_CALLCHAINS = 252
LEVELS = {'off': 0, 'chain': 1, 'stack': 2}
LEVEL_NAMES = {v: k for k, v in LEVELS.items()}
GATE = '/sys/module/kvm/parameters/enable_guest_callchains'
DEBUGFS = '/sys/kernel/debug/kvm'

PTRACE_PEEKDATA = 2
PTRACE_POKEDATA = 5
PTRACE_CONT = 7
PTRACE_GETREGS = 12
PTRACE_SETREGS = 13
PTRACE_SYSCALL = 24
PTRACE_DETACH = 17
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
PTRACE_O_TRACESYSGOOD = 1
PTRACE_EVENT_STOP = 128
# waitpid() for a thread we don't parent (os has no __WALL)
WALL = 0x40000000

SYS_IOCTL = 16
SYS_RESTART_SYSCALL = 219
# What an interrupted system call leaves in %rax for the kernel to restart it
# (include/linux/errno.h): -ERESTARTSYS, -ERESTARTNOINTR, -ERESTARTNOHAND and
# -ERESTART_RESTARTBLOCK.
RESTART_ERRNOS = (512, 513, 514)
ERESTART_RESTARTBLOCK = 516
SYSCALL_INSN = b'\x0f\x05'
RED_ZONE = 128

# The threads tried, at most, and the stops waited for per thread.
MAX_THREADS = 16
MAX_STOPS = 16


def ioc(direction, number, size):
    """The number of a KVM ioctl, as _IOC() makes it."""
    return (direction << 30) | (size << 16) | (KVMIO << 8) | number


KVM_RUN = ioc(0, 0x80, 0)
KVM_CHECK_EXTENSION = ioc(0, 0x03, 0)
# struct kvm_enable_cap: __u32 cap, flags; __u64 args[4]; __u8 pad[64]
KVM_ENABLE_CAP_FORMAT = '=II4Q64x'
KVM_ENABLE_CAP = ioc(1, 0xa3, struct.calcsize(KVM_ENABLE_CAP_FORMAT))


class Regs(ctypes.Structure):
    """struct user_regs_struct of x86-64."""
    _fields_ = [(name, ctypes.c_ulonglong) for name in (
        'r15', 'r14', 'r13', 'r12', 'rbp', 'rbx', 'r11', 'r10', 'r9', 'r8',
        'rax', 'rcx', 'rdx', 'rsi', 'rdi', 'orig_rax', 'rip', 'cs', 'eflags',
        'rsp', 'ss', 'fs_base', 'gs_base', 'ds', 'es', 'fs', 'gs')]


class Failure(Exception):
    """What went wrong, in words for the user."""


class NotThisThread(Exception):
    """The thread can't make the call: try another one."""


def signed(value):
    """A 64-bit register as a signed number."""
    return value - (1 << 64) if value >= 1 << 63 else value


class Tracer:
    """ptrace() through the C library."""

    def __init__(self):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.ptrace.restype = ctypes.c_long
        self.libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int,
                                     ctypes.c_void_p, ctypes.c_void_p]

    def call(self, request, tid, addr=0, data=0):
        ctypes.set_errno(0)
        r = self.libc.ptrace(request, tid, addr, data)
        err = ctypes.get_errno()
        if r == -1 and err:
            raise OSError(err, os.strerror(err))
        return r

    def peek(self, tid, addr):
        return self.call(PTRACE_PEEKDATA, tid, addr) & ((1 << 64) - 1)

    def poke(self, tid, addr, word):
        self.call(PTRACE_POKEDATA, tid, addr, word)

    def get_regs(self, tid):
        regs = Regs()
        self.call(PTRACE_GETREGS, tid, 0, ctypes.addressof(regs))
        return regs

    def set_regs(self, tid, regs):
        self.call(PTRACE_SETREGS, tid, 0, ctypes.addressof(regs))


def wait_stop(tid):
    """Wait for @tid to stop: (stop signal, ptrace event)."""
    _, status = os.waitpid(tid, WALL)
    if not os.WIFSTOPPED(status):
        raise Failure(f'thread {tid} ended while stopped for the call')
    return os.WSTOPSIG(status), status >> 16


def vm_fds(pid):
    """The file descriptors of process @pid that are KVM VMs."""
    directory = f'/proc/{pid}/fd'
    try:
        names = os.listdir(directory)
    except FileNotFoundError as e:
        raise Failure(f'no process {pid}') from e
    except PermissionError as e:
        raise Failure(f'not allowed to look at the files of process {pid}: '
                      'this needs ptrace rights over it (root, or '
                      'CAP_SYS_PTRACE)') from e
    fds = []
    for name in names:
        try:
            if os.readlink(f'{directory}/{name}') == 'anon_inode:kvm-vm':
                fds.append(int(name))
        except OSError:
            pass  # closed meanwhile
    return sorted(fds)


def threads(pid):
    """The threads of @pid to try, best first: never one in KVM_RUN (a vCPU),
    those in a system call (a syscall instruction to reuse) before the
    others, which may have entered one when stopped, the main thread first."""
    candidates = []
    for name in os.listdir(f'/proc/{pid}/task'):
        tid = int(name)
        try:
            with open(f'/proc/{pid}/task/{tid}/syscall') as f:
                fields = f.read().split()
        except OSError:
            continue
        in_syscall = bool(fields) and fields[0] not in ('running', '-1')
        if in_syscall and int(fields[0]) == SYS_IOCTL and int(fields[2], 16) == KVM_RUN:
            continue
        candidates.append((not in_syscall, tid != pid, tid))
    return [tid for _, _, tid in sorted(candidates)][:MAX_THREADS]


def debugfs_level(pid, fd):
    """The VM's level as its debugfs directory shows it, or None.  KVM names
    the directory after the thread that created the VM."""
    tids = set(os.listdir(f'/proc/{pid}/task')) | {str(pid)}
    for path in glob.glob(f'{DEBUGFS}/*-{fd}/guest_callchains'):
        if os.path.basename(os.path.dirname(path)).split('-')[0] in tids:
            try:
                with open(path) as f:
                    return int(f.read())
            except (OSError, ValueError):
                return None
    return None


def gate():
    """The host's gate, kvm.enable_guest_callchains: True, False or None."""
    try:
        with open(GATE) as f:
            return f.read().strip() == 'Y'
    except OSError:
        return None


def highest_level():
    """KVM_CHECK_EXTENSION(KVM_CAP_GUEST_CALLCHAINS) on /dev/kvm: the
    highest level any VM can opt in to, or None without /dev/kvm."""
    try:
        kvm = os.open('/dev/kvm', os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return fcntl.ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_GUEST_CALLCHAINS)
    finally:
        os.close(kvm)


def seize(tracer, tid):
    """Seize @tid, without stopping it."""
    try:
        tracer.call(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACESYSGOOD)
    except OSError as e:
        if e.errno == errno.EPERM:
            raise Failure(f'not allowed to ptrace thread {tid}: this needs '
                          'ptrace rights over the VMM (root, or '
                          'CAP_SYS_PTRACE, and Yama\'s ptrace_scope)') from e
        raise NotThisThread(f'PTRACE_SEIZE: {e.strerror}') from e


def stop(tracer, tid):
    """Stop seized thread @tid; return its registers."""
    tracer.call(PTRACE_INTERRUPT, tid)
    for _ in range(MAX_STOPS):
        sig, event = wait_stop(tid)
        if event == PTRACE_EVENT_STOP:
            return tracer.get_regs(tid)
        # A signal on its way to the thread: let it have it, stop it again.
        tracer.call(PTRACE_CONT, tid, 0, sig)
        tracer.call(PTRACE_INTERRUPT, tid)
    raise NotThisThread('did not stop')


def syscall_address(tracer, tid, regs):
    """The address of the syscall instruction @tid stopped in."""
    if signed(regs.orig_rax) < 0:
        raise NotThisThread('not in a system call')
    if regs.orig_rax == SYS_IOCTL and regs.rsi == KVM_RUN:
        raise NotThisThread('running a vCPU')
    address = regs.rip - len(SYSCALL_INSN)
    base = address & ~7
    code = b''.join(tracer.peek(tid, base + 8 * i).to_bytes(8, 'little')
                    for i in range(2))
    if code[address - base:address - base + 2] != SYSCALL_INSN:
        raise NotThisThread('no syscall instruction before its RIP')
    return address


def resumed_regs(saved):
    """The registers @saved, as the kernel would have resumed them: a system
    call that the stop interrupted is restarted."""
    regs = Regs.from_buffer_copy(saved)
    err = -signed(saved.rax)
    if signed(saved.orig_rax) >= 0 and err in RESTART_ERRNOS:
        regs.rax = saved.orig_rax
        regs.rip -= len(SYSCALL_INSN)
    elif signed(saved.orig_rax) >= 0 and err == ERESTART_RESTARTBLOCK:
        regs.rax = SYS_RESTART_SYSCALL
        regs.rip -= len(SYSCALL_INSN)
    regs.orig_rax = (1 << 64) - 1
    return regs


def run_ioctl(tracer, tid, saved, vmfd, cap):
    """Have stopped thread @tid run ioctl(@vmfd, KVM_ENABLE_CAP, @cap), with
    @cap below its stack's red zone; return the call's result."""
    address = syscall_address(tracer, tid, saved)
    words = (len(cap) + 7) // 8
    arg = (saved.rsp - RED_ZONE - words * 8) & ~15
    old = [tracer.peek(tid, arg + 8 * i) for i in range(words)]
    try:
        padded = cap + bytes(words * 8 - len(cap))
        for i in range(words):
            tracer.poke(tid, arg + 8 * i,
                        int.from_bytes(padded[8 * i:8 * i + 8], 'little'))
        regs = Regs.from_buffer_copy(saved)
        regs.rax, regs.orig_rax = SYS_IOCTL, (1 << 64) - 1
        regs.rdi, regs.rsi, regs.rdx = vmfd, KVM_ENABLE_CAP, arg
        regs.rip, regs.rsp = address, arg
        tracer.set_regs(tid, regs)
        # To the system call's entry, then to its exit.
        for _ in range(2):
            tracer.call(PTRACE_SYSCALL, tid)
            sig, _ = wait_stop(tid)
            if sig != (signal.SIGTRAP | 0x80):
                raise Failure(f'thread {tid} stopped with signal {sig} '
                              'during the call')
        return signed(tracer.get_regs(tid).rax)
    finally:
        for i, word in enumerate(old):
            tracer.poke(tid, arg + 8 * i, word)


def call_in_vmm(pid, vmfd, cap):
    """ioctl(@vmfd, KVM_ENABLE_CAP, @cap) in process @pid; return its result."""
    tracer = Tracer()
    tried = []
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK,
                                     {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
    try:
        for tid in threads(pid):
            try:
                seize(tracer, tid)
            except NotThisThread as e:
                tried.append(f'{tid}: {e}')
                continue
            saved = None
            try:
                saved = stop(tracer, tid)
                return run_ioctl(tracer, tid, saved, vmfd, cap)
            except NotThisThread as e:
                tried.append(f'{tid}: {e}')
            finally:
                if saved is not None:
                    tracer.set_regs(tid, resumed_regs(saved))
                tracer.call(PTRACE_DETACH, tid)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    raise Failure(f'no thread of process {pid} could make the call '
                  f'({"; ".join(tried) or "every thread runs a vCPU"})')


def set_level(pid, fd, level):
    """Make process @pid opt in its VM @fd at @level."""
    cap = struct.pack(KVM_ENABLE_CAP_FORMAT, KVM_CAP_GUEST_CALLCHAINS, 0,
                      level, 0, 0, 0)
    r = call_in_vmm(pid, fd, cap)
    if r == -errno.EINVAL and level:
        raise Failure(f'KVM refused level {level} for the VM of fd {fd}: its '
                      'memory or state is encrypted or private (SEV, TDX, '
                      'KVM_X86_SW_PROTECTED_VM), or the kernel has no such '
                      'level')
    if r < 0:
        raise Failure(f'ioctl(KVM_ENABLE_CAP) in process {pid}: '
                      f'{os.strerror(-r)}')


def describe(level):
    if level is None:
        return 'level unknown (no debugfs)'
    return f'level {level} ({LEVEL_NAMES.get(level, "?")})'


def main():
    parser = argparse.ArgumentParser(
        description='Opt a running VM in to guest call chains in host perf '
        'samples (KVM_CAP_GUEST_CALLCHAINS): ptrace() makes one thread of '
        'its VMM issue the ioctl and then go on where it was.  Without '
        'LEVEL, list the VMs of PID and their levels.')
    parser.add_argument('pid', type=int, metavar='PID',
                        help='the VMM process, e.g. $(pidof qemu-system-x86_64)')
    parser.add_argument('level', nargs='?', choices=list(LEVELS) + ['0', '1', '2'],
                        metavar='LEVEL',
                        help='off (0), chain (1: call chains) or stack (2: also '
                        'registers and stack, for --call-graph dwarf)')
    parser.add_argument('--fd', type=int,
                        help='the VM\'s file descriptor in PID, if it has '
                        'several VMs (default: all of them)')
    args = parser.parse_args()

    try:
        fds = vm_fds(args.pid)
        if args.fd is not None:
            if args.fd not in fds:
                raise Failure(f'file descriptor {args.fd} of process '
                              f'{args.pid} is not a KVM VM')
            fds = [args.fd]
        if not fds:
            raise Failure(f'process {args.pid} has no KVM VM')

        if args.level is None:
            for fd in fds:
                print(f'pid {args.pid} fd {fd}: '
                      f'{describe(debugfs_level(args.pid, fd))}')
            return 0

        level = LEVELS.get(args.level)
        if level is None:
            level = int(args.level)
        if platform.machine() != 'x86_64':
            raise Failure('this tool knows only x86-64 VMMs')
        if level and highest_level() == 0:
            raise Failure('this kernel offers no guest call chains '
                          '(KVM_CAP_GUEST_CALLCHAINS)')
        for fd in fds:
            set_level(args.pid, fd, level)
            shown = debugfs_level(args.pid, fd)
            if shown is not None and shown != level:
                raise Failure(f'pid {args.pid} fd {fd}: set level {level}, '
                              f'but debugfs shows {shown}')
            print(f'pid {args.pid} fd {fd}: {describe(level)}')
        if level and gate() is False:
            # KVM keeps the VM's level while the gate is off.
            print('kvm_guest_callchains: the host\'s gate is off: nothing is '
                  f'taken until it is on ({GATE})', file=sys.stderr)
    except Failure as e:
        print(f'kvm_guest_callchains: {e}', file=sys.stderr)
        return 1
    except OSError as e:
        print(f'kvm_guest_callchains: {e.strerror}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
