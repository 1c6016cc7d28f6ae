// SPDX-License-Identifier: GPL-2.0-only
/*
 * Guest call-chain sampling: in the kernel (kvm.enable_guest_callchains) or
 * in the VMM, side by side, on one guest workload in one process.
 *
 * The guest recurses to a given depth (dense frames, or one frame per page)
 * and then spins incrementing a counter in guest memory: the counter's rate
 * is the work the guest gets done.  Each run samples the vCPU thread with one
 * of these samplers:
 *
 *  none          no sampler: the control
 *  kernel-ip     cpu-clock perf event, PERF_SAMPLE_IP|PERF_SAMPLE_TID
 *  kernel-chain  the same plus PERF_SAMPLE_CALLCHAIN, knob Y: the kernel walks
 *                the guest's page tables and frame pointers in the sample
 *  user          what userspace can do today: a POSIX timer signals the vCPU
 *                thread (SIGEV_THREAD_ID), KVM_RUN returns -EINTR (the no-op
 *                handler sets kvm_run.immediate_exit, as QEMU kicks vCPUs),
 *                the VMM reads KVM_GET_REGS and KVM_GET_SREGS, walks the
 *                guest's page tables from CR3 and the frame-pointer chain
 *                from RBP in its own mapping of guest memory (the kernel's
 *                algorithm, bounds and one-page translation cache), stores
 *                the chain in a ring and re-enters KVM_RUN
 *  user-fast     the cheapest userspace variant we know: the signal is
 *                blocked outside KVM_RUN (KVM_SET_SIGNAL_MASK) and taken with
 *                sigtimedwait(), no handler; registers from kvm_run (sync
 *                regs), no ioctl; the same walk
 *
 * Each run alternates phases with the sampler off and on (off-on-on-off...,
 * 25 ms each), so each run carries its own baseline, interleaved with the
 * sampled phases.  The perf ring and the userspace ring are big enough for
 * the whole run and are checked after it; the only other thread sleeps
 * between phase boundaries.  Chains are checked against the return addresses
 * the guest records.  results.csv has one line per run, phases.csv one per
 * phase (with L1 TSC boundaries); bench/report.py makes the tables.
 *
 *   guest_callchain_bench [-o results.csv] [-r reps] [-d seconds] [-w seconds]
 *                         [-p phase_seconds] [-T]
 *   guest_callchain_bench --smoke
 *   guest_callchain_bench --host-clock QEMU_PID DIR	(on the host, see there)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "kvm_util.h"
#include "processor.h"
#include "ucall_common.h"

#define KNOB_PATH		"/sys/module/kvm/parameters/enable_guest_callchains"
#define MAX_STACK_PATH		"/proc/sys/kernel/perf_event_max_stack"

#define MAX_DEPTH		128
#define MAX_PHASES		4096
#define GUEST_STACK_SIZE	(1024 * 1024)
#define BENCH_PAGE_SIZE		4096ull
#define BENCH_PAGE_MASK		(~(BENCH_PAGE_SIZE - 1))
#define ADDR_MASK_4K		GENMASK_ULL(51, 12)

/* ------------------------------------------------------------------------
 * The guest.  Every function records its return address and frame, index 0
 * being the leaf's, so the host knows the exact chain to expect.
 */
static uint64_t work_counter;
static uint64_t work_stop;
static uint64_t shape_depth;		/* frames below bench_entry, >= 3 */
static uint64_t shape_sparse;		/* one frame per page */
static uint64_t ret_addr[MAX_DEPTH];
static uint64_t frame_addr[MAX_DEPTH];
static uint64_t loop_start;
static uint64_t loop_end;

#define record_frame(d)								\
do {										\
	ret_addr[d] = (uint64_t)__builtin_return_address(0);			\
	frame_addr[d] = (uint64_t)__builtin_frame_address(0);			\
} while (0)

/* Calls @fn with RBP = 0: the chain ends at @fn's frame. */
void bench_entry(void (*fn)(void));
asm(".pushsection .text\n"
	".global bench_entry\n"
	".type bench_entry, @function\n"
	"bench_entry:\n"
	"	push %rbp\n"
	"	xor %ebp, %ebp\n"
	"	call *%rdi\n"
	"bench_entry_ret:\n"
	"	pop %rbp\n"
	"	ret\n"
	".size bench_entry, . - bench_entry\n"
	".popsection\n");

static uint64_t bench_entry_ret_address(void)
{
	uint64_t address;

	asm("lea bench_entry_ret(%%rip), %0" : "=r" (address));
	return address;
}

static noinline void leaf(void)
{
	uint64_t depth = READ_ONCE(shape_depth);
	uint64_t i;

	record_frame(0);
	for (i = 0; i < depth; i++) {
		uint64_t *frame = (uint64_t *)frame_addr[i];

		GUEST_ASSERT_EQ(frame[0], i + 1 < depth ? frame_addr[i + 1] : 0);
		GUEST_ASSERT_EQ(frame[1], ret_addr[i]);
	}

	/* The work: count until told to stop, without touching the stack. */
	asm volatile("lea 1f(%%rip), %%rax\n\t"
		     "mov %%rax, %[start]\n\t"
		     "lea 2f(%%rip), %%rax\n\t"
		     "mov %%rax, %[end]\n\t"
		     "1: incq %[counter]\n\t"
		     "cmpq $0, %[stop]\n\t"
		     "je 1b\n\t"
		     "2:\n\t"
		     : [counter] "+m" (work_counter), [start] "=m" (loop_start),
		       [end] "=m" (loop_end)
		     : [stop] "m" (work_stop)
		     : "rax", "cc", "memory");
}

/* Small frames: a whole deep stack fits in a page or two. */
static noinline void level_dense(uint64_t n)
{
	volatile uint64_t pad[4];

	pad[0] = n;
	record_frame(n + 1);
	if (n)
		level_dense(n - 1);
	else
		leaf();
	pad[1] = pad[0];
}

/* More than a page per frame: every frame is on a page of its own. */
static noinline void level_sparse(uint64_t n)
{
	volatile uint8_t pad[BENCH_PAGE_SIZE];

	pad[0] = n;
	pad[BENCH_PAGE_SIZE - 1] = n;
	record_frame(n + 1);
	if (n)
		level_sparse(n - 1);
	else
		leaf();
	pad[1] = pad[0];
}

static noinline void shape_entry(void)
{
	uint64_t depth = READ_ONCE(shape_depth);

	record_frame(depth - 1);
	if (READ_ONCE(shape_sparse))
		level_sparse(depth - 3);
	else
		level_dense(depth - 3);
	barrier();
}

static void guest_main(void)
{
	for (;;) {
		bench_entry(shape_entry);
		GUEST_SYNC(0);
	}
}

/* ------------------------------------------------------------------------
 * Configurations and results.
 */
enum sampler_kind { S_NONE, S_KERNEL_IP, S_KERNEL_CHAIN, S_USER, S_USER_FAST };
static const char * const sampler_name[] = {
	"none", "kernel-ip", "kernel-chain", "user", "user-fast"
};

static bool is_user(enum sampler_kind kind)
{
	return kind == S_USER || kind == S_USER_FAST;
}

static bool has_chain(enum sampler_kind kind)
{
	return kind == S_KERNEL_CHAIN || is_user(kind);
}

struct config {
	bool sparse;
	int depth;
	enum sampler_kind kind;
	int rate;			/* Hz */
};

struct expect {
	int depth;
	uint64_t loop_start, loop_end;
	uint64_t ret[MAX_DEPTH];
	int pages;			/* distinct stack pages of the frames */
};

struct tally {
	uint64_t samples;		/* delivered */
	uint64_t guest;			/* taken while in the guest */
	uint64_t in_loop;		/* ... at the work loop: chain known */
	uint64_t complete;		/* ... with exactly the expected chain */
	uint64_t lost;
	uint64_t translations;		/* user: page table walks */
	uint64_t handle_ns;		/* user: time from -EINTR to re-entry */
};

struct result {
	struct config c;
	int run;			/* index in results.csv */
	int rep;
	double on_s, off_s;		/* phases with the sampler on, off */
	uint64_t work_on, work_off;
	double on_per_s, off_per_s;	/* work per second */
	double rel;			/* on / off: upper quartiles of phases */
	double rel_pooled;		/* on / off: all phases together */
	struct tally t;
	int pages;
};

static const char *results_path;
static FILE *results_file;
static FILE *phases_file;		/* per phase: TSC boundaries and work */
static const char *sync_path;		/* for the host's --host-clock */
static int run_index;
static uint32_t max_stack = 127;
static double duration_s = 2.2, warmup_s = 0.2;
static double phase_s = 0.025;
static bool trace_phases;

/*
 * Under QEMU TCG, L1's TSC is the host's TSC plus a constant, which lets
 * the host side (--host-clock) tell how much CPU time QEMU really had during
 * each phase: see report.py.
 */
static uint64_t bench_rdtsc(void)
{
	uint32_t lo, hi;

	asm volatile("rdtsc" : "=a" (lo), "=d" (hi));
	return ((uint64_t)hi << 32) | lo;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* ------------------------------------------------------------------------
 * The VM.
 */
struct memslot_map {
	uint64_t gpa, size;
	uint8_t *hva;
};

struct bench {
	struct kvm_vm *vm;
	struct kvm_vcpu *vcpu;
	pid_t tid;
	uint64_t *counter, *stop, *depth, *sparse;
	struct memslot_map slots[16];
	int nr_slots;
};

static void bench_create(struct bench *b)
{
	struct userspace_mem_region *region;
	struct kvm_regs regs;
	vm_vaddr_t stack;
	int bkt;

	b->vm = __vm_create_with_one_vcpu(&b->vcpu, GUEST_STACK_SIZE / 4096 + 64, guest_main);
	b->tid = syscall(__NR_gettid);
	/* The module parameter is the gate; each VM opts in as well. */
	vm_set_guest_callchains(b->vm, true);

	stack = vm_vaddr_alloc(b->vm, GUEST_STACK_SIZE, KVM_UTIL_MIN_VADDR);
	vcpu_regs_get(b->vcpu, &regs);
	regs.rsp = stack + GUEST_STACK_SIZE - 8;
	vcpu_regs_set(b->vcpu, &regs);

	b->counter = addr_gva2hva(b->vm, (vm_vaddr_t)&work_counter);
	b->stop = addr_gva2hva(b->vm, (vm_vaddr_t)&work_stop);
	b->depth = addr_gva2hva(b->vm, (vm_vaddr_t)&shape_depth);
	b->sparse = addr_gva2hva(b->vm, (vm_vaddr_t)&shape_sparse);

	/* What a VMM knows anyway: its memslots. */
	hash_for_each(b->vm->regions.slot_hash, bkt, region, slot_node) {
		TEST_ASSERT(b->nr_slots < ARRAY_SIZE(b->slots), "Too many memslots");
		b->slots[b->nr_slots].gpa = region->region.guest_phys_addr;
		b->slots[b->nr_slots].size = region->region.memory_size;
		b->slots[b->nr_slots].hva = region->host_mem;
		b->nr_slots++;
	}
}

/* ------------------------------------------------------------------------
 * The userspace sampler's walk: the kernel's algorithm, in the VMM.
 */
struct uwalk {
	struct bench *b;
	const struct kvm_sregs *sregs;
	bool user;
	bool cached_valid;
	uint64_t cached_page;
	uint8_t *cached_hva;
	uint64_t translations;
};

/* Guest physical to VMM virtual: look the address up in the memslots. */
static uint8_t *gpa_to_hva(struct bench *b, uint64_t gpa, unsigned int length)
{
	int i;

	for (i = 0; i < b->nr_slots; i++) {
		struct memslot_map *s = &b->slots[i];

		if (gpa >= s->gpa && gpa - s->gpa + length <= s->size)
			return s->hva + (gpa - s->gpa);
	}
	return NULL;
}

static bool uwalk_translate(struct uwalk *w, uint64_t gva, uint64_t *gpa)
{
	const struct kvm_sregs *sregs = w->sregs;
	int level, bits;
	uint64_t table, entry;
	uint8_t *hva;

	w->translations++;
	if (!(sregs->cr0 & X86_CR0_PG)) {
		if (gva > UINT32_MAX)
			return false;
		*gpa = gva;
		return true;
	}
	/* Long mode only: PAE and 2-level paging are not exercised here. */
	if (!(sregs->efer & EFER_LMA))
		return false;

	level = sregs->cr4 & X86_CR4_LA57 ? 5 : 4;
	bits = level == 5 ? 57 : 48;
	if ((uint64_t)((int64_t)(gva << (64 - bits)) >> (64 - bits)) != gva)
		return false;
	table = sregs->cr3 & ADDR_MASK_4K;

	for (;; level--) {
		unsigned int shift = 12 + (level - 1) * 9;
		unsigned int index = (gva >> shift) & 511;

		hva = gpa_to_hva(w->b, table + index * 8, 8);
		if (!hva)
			return false;
		entry = READ_ONCE(*(uint64_t *)hva);
		if (!(entry & PTE_PRESENT_MASK))
			return false;
		if (w->user && !(entry & PTE_USER_MASK))
			return false;
		if (level == 1) {
			*gpa = (entry & ADDR_MASK_4K) | (gva & ~BENCH_PAGE_MASK);
			return true;
		}
		if (entry & PTE_LARGE_MASK) {
			if (level > 3)
				return false;
			*gpa = (entry & ADDR_MASK_4K & ~GENMASK_ULL(shift - 1, 0)) |
			       (gva & GENMASK_ULL(shift - 1, 0));
			return true;
		}
		table = entry & ADDR_MASK_4K;
	}
}

static bool uwalk_read(struct uwalk *w, uint64_t addr, void *dest, unsigned int length)
{
	uint8_t *d = dest;

	while (length) {
		unsigned int chunk = BENCH_PAGE_SIZE - (addr & ~BENCH_PAGE_MASK);
		uint64_t gpa;

		if (chunk > length)
			chunk = length;
		/* Consecutive frames usually share a page: translate it once. */
		if (!w->cached_valid || w->cached_page != (addr & BENCH_PAGE_MASK)) {
			w->cached_valid = false;
			if (!uwalk_translate(w, addr & BENCH_PAGE_MASK, &gpa))
				return false;
			w->cached_hva = gpa_to_hva(w->b, gpa, BENCH_PAGE_SIZE);
			if (!w->cached_hva)
				return false;
			w->cached_page = addr & BENCH_PAGE_MASK;
			w->cached_valid = true;
		}
		memcpy(d, w->cached_hva + (addr & ~BENCH_PAGE_MASK), chunk);
		addr += chunk;
		d += chunk;
		length -= chunk;
	}
	return true;
}

/* [ip, return addresses...] like perf_callchain_guest(); returns the count. */
static int uwalk_chain(struct uwalk *w, const struct kvm_regs *regs, uint64_t *chain)
{
	const struct kvm_sregs *sregs = w->sregs;
	uint64_t word_size, code_base, stack_base, mask, fp, ip;
	int nr = 0;

	if (!(sregs->cr0 & X86_CR0_PE) || (regs->rflags & BIT_ULL(17)) /* VM */)
		return 0;
	if ((sregs->efer & EFER_LMA) && sregs->cs.l) {
		word_size = 8;
		code_base = stack_base = 0;
		ip = regs->rip;
		mask = ~0ull;
	} else if (sregs->cs.db) {
		word_size = 4;
		code_base = sregs->cs.base;
		stack_base = sregs->ss.base;
		mask = UINT32_MAX;
		ip = (code_base + regs->rip) & mask;
	} else {
		return 0;
	}
	w->user = sregs->ss.dpl != 0;
	w->cached_valid = false;

	chain[nr++] = ip;
	fp = regs->rbp;
	while (fp && !(fp & (word_size - 1)) && nr < max_stack) {
		uint64_t next, ret;
		union {
			uint32_t w32[2];
			uint64_t w64[2];
		} frame;

		if (!uwalk_read(w, (stack_base + fp) & mask, &frame, 2 * word_size))
			break;
		next = word_size == 4 ? frame.w32[0] : frame.w64[0];
		ret = word_size == 4 ? frame.w32[1] : frame.w64[1];
		ret = (code_base + ret) & mask;
		if (ret >= (uint64_t)PERF_CONTEXT_MAX)
			break;
		chain[nr++] = ret;
		if (next <= fp)
			break;
		fp = next;
	}
	return nr;
}

/* ------------------------------------------------------------------------
 * Checking samples.
 */
static void tally_chain(struct tally *t, const struct expect *e, uint64_t ip,
			const uint64_t *frames, uint64_t nr_frames)
{
	int i;

	if (ip < e->loop_start || ip >= e->loop_end)
		return;
	t->in_loop++;
	if (nr_frames != (uint64_t)e->depth)
		return;
	for (i = 0; i < e->depth; i++) {
		if (frames[i] != e->ret[i])
			return;
	}
	t->complete++;
}

/* Ring words for one run of @c at @words_per_sample, with a margin. */
static uint64_t ring_need(const struct config *c, uint64_t words_per_sample)
{
	return (uint64_t)(c->rate * (warmup_s + duration_s + 1.0) * 1.25 + 1000) *
	       words_per_sample;
}

/* ------------------------------------------------------------------------
 * The in-kernel sampler: a cpu-clock event on the vCPU thread, read after
 * the run.
 */
struct ksampler {
	int fd;
	void *base;
	size_t mmap_size;
	const uint8_t *data;
	uint64_t data_size;
};

static void ksampler_open(struct ksampler *k, const struct config *c)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 1000000000ull / c->rate,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID,
		.disabled = 1,
	};
	uint64_t bytes = 8 * ring_need(c, 4 + (c->kind == S_KERNEL_CHAIN ? c->depth + 3 : 0));
	uint64_t pages = 16;

	if (c->kind == S_KERNEL_CHAIN)
		attr.sample_type |= PERF_SAMPLE_CALLCHAIN;
	while (pages * 4096 < bytes)
		pages *= 2;

	k->fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	TEST_ASSERT(k->fd >= 0, "perf_event_open(cpu-clock) failed: %s", strerror(errno));
	k->mmap_size = (pages + 1) * 4096;
	k->base = mmap(NULL, k->mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED, k->fd, 0);
	TEST_ASSERT(k->base != MAP_FAILED, "Mapping a %lu-page perf ring failed", pages);
	k->data = (const uint8_t *)k->base + 4096;
	k->data_size = pages * 4096;
}

static void ring_copy(const uint8_t *data, uint64_t size, uint64_t position,
		      void *dest, uint64_t length)
{
	uint64_t offset = position % size;
	uint64_t first = length < size - offset ? length : size - offset;

	memcpy(dest, data + offset, first);
	memcpy((uint8_t *)dest + first, data, length - first);
}

static void ksampler_parse(struct ksampler *k, const struct config *c,
			   const struct expect *e, struct tally *t)
{
	struct perf_event_mmap_page *page = k->base;
	uint64_t head = __atomic_load_n(&page->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = page->data_tail;
	static uint64_t record[65536 / 8];
	struct perf_event_header h;
	const uint64_t *w;

	while (tail < head) {
		ring_copy(k->data, k->data_size, tail, &h, sizeof(h));
		TEST_ASSERT(h.size >= sizeof(h) && h.size <= head - tail && !(h.size % 8),
			    "Bad perf record size %u", h.size);
		/* In place unless the record wraps (the ring is sized not to). */
		if (tail % k->data_size + h.size <= k->data_size) {
			w = (const uint64_t *)(k->data + tail % k->data_size) + 1;
		} else {
			ring_copy(k->data, k->data_size, tail, record, h.size);
			w = &record[1];
		}

		if (h.type == PERF_RECORD_SAMPLE) {
			/* ip, pid/tid, [nr, chain...] */
			uint16_t cpumode = h.misc & PERF_RECORD_MISC_CPUMODE_MASK;

			t->samples++;
			if (cpumode == PERF_RECORD_MISC_GUEST_KERNEL) {
				t->guest++;
				if (c->kind == S_KERNEL_CHAIN) {
					uint64_t nr = w[2];
					const uint64_t *chain = &w[3];

					TEST_ASSERT(h.size == 8 * (4 + nr),
						    "Sample of %u bytes with %lu chain entries",
						    h.size, nr);
					/* [PERF_CONTEXT_GUEST_KERNEL, ip, frames...] */
					if (nr >= 2 && chain[0] == (uint64_t)PERF_CONTEXT_GUEST_KERNEL &&
					    chain[1] == w[0])
						tally_chain(t, e, w[0], &chain[2], nr - 2);
					else
						tally_chain(t, e, w[0], NULL, ~0ull);
				} else if (w[0] >= e->loop_start && w[0] < e->loop_end) {
					t->in_loop++;
				}
			}
		} else if (h.type == PERF_RECORD_LOST) {
			t->lost += w[1];	/* id, lost */
		}
		tail += h.size;
	}
	__atomic_store_n(&page->data_tail, tail, __ATOMIC_RELEASE);
}

static void ksampler_close(struct ksampler *k)
{
	munmap(k->base, k->mmap_size);
	close(k->fd);
}

/* ------------------------------------------------------------------------
 * The userspace sampler's kick.
 */
static uint32_t sample_pending;
static struct kvm_run *kick_run;

static void kick_handler(int sig)
{
	__atomic_store_n(&sample_pending, 1, __ATOMIC_SEQ_CST);
	kick_run->immediate_exit = 1;
}

/*
 * "user-fast" keeps the kick signal blocked outside KVM_RUN and unblocked
 * inside it (KVM_SET_SIGNAL_MASK), as QEMU can: no handler, no signal frame,
 * the signal interrupts KVM_RUN and is then taken with sigtimedwait().  KVM
 * stores the registers in kvm_run on every exit (sync regs).
 */
static sigset_t kick_set;
static const struct timespec zero_timeout;

static void user_fast_setup(struct bench *b, bool on)
{
	struct {
		struct kvm_signal_mask mask;
		uint8_t set[8];
	} m = { .mask.len = 8 };
	sigset_t blocked;

	if (on) {
		TEST_ASSERT(!pthread_sigmask(SIG_BLOCK, &kick_set, &blocked), "pthread_sigmask failed");
		sigdelset(&blocked, SIGRTMIN);
		memcpy(m.set, &blocked, 8);
		TEST_ASSERT(!ioctl(b->vcpu->fd, KVM_SET_SIGNAL_MASK, &m),
			    "KVM_SET_SIGNAL_MASK failed");
		b->vcpu->run->kvm_valid_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
	} else {
		b->vcpu->run->kvm_valid_regs = 0;
		TEST_ASSERT(!ioctl(b->vcpu->fd, KVM_SET_SIGNAL_MASK, NULL),
			    "KVM_SET_SIGNAL_MASK failed");
		while (sigtimedwait(&kick_set, NULL, &zero_timeout) == SIGRTMIN)
			;
		TEST_ASSERT(!pthread_sigmask(SIG_UNBLOCK, &kick_set, NULL), "pthread_sigmask failed");
	}
}

/*
 * Where the userspace sampler records its chains, as perf has its ring:
 * [nr, ip, return addresses...] per sample, checked after the run.  Sized
 * for the longest run and faulted in once.
 */
static uint64_t *user_ring;
static uint64_t user_ring_words;
static uint64_t user_ring_head;

/*
 * "user": the registers from KVM_GET_REGS and KVM_GET_SREGS.  "user-fast":
 * from kvm_run, where KVM stored them on the way out (KVM_SYNC_X86_REGS and
 * KVM_SYNC_X86_SREGS), no ioctl.  @start: when KVM_RUN returned.
 */
static void user_sample(struct bench *b, struct tally *t, bool fast, uint64_t start)
{
	uint64_t *chain = &user_ring[user_ring_head + 1];
	struct kvm_regs regs_buf, *regs = &regs_buf;
	struct kvm_sregs sregs_buf, *sregs = &sregs_buf;
	struct uwalk w = { .b = b };
	int nr;

	if (fast) {
		regs = &b->vcpu->run->s.regs.regs;
		sregs = &b->vcpu->run->s.regs.sregs;
	} else {
		TEST_ASSERT(!ioctl(b->vcpu->fd, KVM_GET_REGS, regs), "KVM_GET_REGS failed");
		TEST_ASSERT(!ioctl(b->vcpu->fd, KVM_GET_SREGS, sregs), "KVM_GET_SREGS failed");
	}
	w.sregs = sregs;

	t->samples++;
	if (user_ring_head + 1 + max_stack > user_ring_words) {
		t->lost++;
	} else {
		nr = uwalk_chain(&w, regs, chain);
		user_ring[user_ring_head] = nr;
		user_ring_head += 1 + nr;
		t->translations += w.translations;
	}
	t->handle_ns += now_ns() - start;
}

static void user_parse(const struct expect *e, struct tally *t)
{
	uint64_t pos = 0;

	while (pos < user_ring_head) {
		uint64_t nr = user_ring[pos];
		const uint64_t *chain = &user_ring[pos + 1];

		if (nr) {
			t->guest++;
			tally_chain(t, e, chain[0], &chain[1], nr - 1);
		}
		pos += 1 + nr;
	}
}

/* ------------------------------------------------------------------------
 * One run.
 */
/*
 * The monitor thread paces a run: after the warm-up it alternates phases
 * with the sampler off and on (off-on-on-off-off-on-...), reads the work
 * counter at every phase boundary, and finally stops the guest.  Each run
 * thus carries its own baseline, measured in phases interleaved with the
 * sampled ones, so that slow drift of the host (TCG, other load) cancels.
 */
struct monitor {
	struct bench *b;
	const struct config *c;
	struct ksampler *k;
	timer_t timer;
	uint64_t work[2];		/* [off, on] */
	uint64_t ns[2];
	int phases;
	double rate[MAX_PHASES];	/* work per second in each phase */
	uint64_t phase_work[MAX_PHASES];
	uint64_t tsc[MAX_PHASES + 1];	/* phase boundaries */
};

static void sleep_until(uint64_t ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000ull, .tv_nsec = ns % 1000000000ull };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void sampler_switch(struct monitor *m, bool on)
{
	const struct config *c = m->c;

	if (c->kind == S_KERNEL_IP || c->kind == S_KERNEL_CHAIN) {
		TEST_ASSERT(!ioctl(m->k->fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0),
			    "Switching perf failed");
	} else if (is_user(c->kind)) {
		long ns = on ? 1000000000l / c->rate : 0;
		struct itimerspec its = {
			.it_interval = { .tv_sec = ns / 1000000000l, .tv_nsec = ns % 1000000000l },
			.it_value = { .tv_sec = ns / 1000000000l, .tv_nsec = ns % 1000000000l },
		};

		TEST_ASSERT(!timer_settime(m->timer, 0, &its, NULL), "timer_settime failed");
	}
}

static void *monitor_thread(void *arg)
{
	struct monitor *m = arg;
	uint64_t t = now_ns(), count, prev_t, prev_count;
	bool state = false;
	int p;

	sleep_until(t + warmup_s * 1e9);
	prev_t = now_ns();
	m->tsc[0] = bench_rdtsc();
	prev_count = __atomic_load_n(m->b->counter, __ATOMIC_RELAXED);
	for (p = 0; p < m->phases; p++) {
		bool on = (p % 4 == 1 || p % 4 == 2);

		if (on != state)
			sampler_switch(m, on);
		state = on;
		sleep_until(prev_t + duration_s * 1e9 / m->phases);
		t = now_ns();
		m->tsc[p + 1] = bench_rdtsc();
		count = __atomic_load_n(m->b->counter, __ATOMIC_RELAXED);
		m->phase_work[p] = count - prev_count;
		m->work[on] += count - prev_count;
		m->ns[on] += t - prev_t;
		m->rate[p] = (count - prev_count) * 1e9 / (t - prev_t);
		if (trace_phases)
			printf("phase %d %s %.1f Mwork/s\n", p, on ? "on" : "off",
			       (count - prev_count) * 1e3 / (t - prev_t));
		prev_t = t;
		prev_count = count;
	}
	if (state)
		sampler_switch(m, false);
	__atomic_store_n(m->b->stop, 1, __ATOMIC_RELAXED);
	return NULL;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * The host under L1 is shared, and it deschedules QEMU now and then: that
 * only ever slows a phase down, by a lot, at random.  The upper quartile of
 * the phase rates of each state estimates the undisturbed rate, where the
 * pooled rate (kept for comparison) takes every stall in.
 */
static double upper_quartile(const struct monitor *m, bool on)
{
	static double rates[MAX_PHASES];
	int p, n = 0;

	for (p = 0; p < m->phases; p++) {
		if ((p % 4 == 1 || p % 4 == 2) == on)
			rates[n++] = m->rate[p];
	}
	qsort(rates, n, sizeof(rates[0]), compare_double);
	return rates[(3 * n) / 4 < n ? (3 * n) / 4 : n - 1];
}

static void read_expect(struct bench *b, struct expect *e, int depth)
{
	uint64_t pages[MAX_DEPTH];
	int i, j;

	sync_global_from_guest(b->vm, ret_addr);
	sync_global_from_guest(b->vm, frame_addr);
	sync_global_from_guest(b->vm, loop_start);
	sync_global_from_guest(b->vm, loop_end);
	e->depth = depth;
	e->loop_start = loop_start;
	e->loop_end = loop_end;
	memcpy(e->ret, ret_addr, sizeof(e->ret));
	TEST_ASSERT(ret_addr[depth - 1] == bench_entry_ret_address(),
		    "Outermost return address 0x%lx, expected bench_entry_ret 0x%lx",
		    ret_addr[depth - 1], bench_entry_ret_address());
	e->pages = 0;
	for (i = 0; i < depth; i++) {
		uint64_t p = frame_addr[i] & BENCH_PAGE_MASK;

		for (j = 0; j < e->pages && pages[j] != p; j++)
			;
		if (j == e->pages)
			pages[e->pages++] = p;
	}
}

/*
 * Tell the host's --host-clock where L1's TSC is: it notes its own TSC when
 * the file is closed, later than ours by the 9p round trip at least.
 */
static void sync_mark(void)
{
	char text[32];
	int fd, len;
	uint64_t tsc;

	if (!sync_path)
		return;
	tsc = bench_rdtsc();
	len = snprintf(text, sizeof(text), "%lu\n", tsc);
	fd = open(sync_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return;
	if (write(fd, text, len) != len)
		fprintf(stderr, "Writing %s failed\n", sync_path);
	close(fd);
}

static void run_config(struct bench *b, const struct config *c, int rep, struct result *r)
{
	struct kvm_run *run = b->vcpu->run;
	struct ksampler k = {};
	struct monitor m = { .b = b, .c = c, .k = &k };
	struct expect e;
	struct ucall uc;
	pthread_t monitor;
	bool kernel = c->kind == S_KERNEL_IP || c->kind == S_KERNEL_CHAIN;

	memset(r, 0, sizeof(*r));
	r->c = *c;
	r->rep = rep;
	r->run = run_index++;
	sync_mark();

	*b->depth = c->depth;
	*b->sparse = c->sparse;
	*b->stop = 0;
	*b->counter = 0;

	if (kernel)
		ksampler_open(&k, c);
	if (is_user(c->kind)) {
		struct sigevent sev = {
			.sigev_notify = SIGEV_THREAD_ID,
			.sigev_signo = SIGRTMIN,
		};

		sev._sigev_un._tid = b->tid;
		TEST_ASSERT(!timer_create(CLOCK_MONOTONIC, &sev, &m.timer), "timer_create failed");
		if (c->kind == S_USER_FAST)
			user_fast_setup(b, true);
		__atomic_store_n(&sample_pending, 0, __ATOMIC_SEQ_CST);
		run->immediate_exit = 0;
		user_ring_head = 0;
		TEST_ASSERT(ring_need(c, c->depth + 2) <= user_ring_words,
			    "User ring too small for %d Hz", c->rate);
	}

	/* Phases of at least phase_s, in whole off-on-on-off groups. */
	m.phases = 4 * (int)(duration_s / (4 * phase_s));
	if (m.phases < 4)
		m.phases = 4;
	TEST_ASSERT(m.phases <= MAX_PHASES, "Too many phases");
	pthread_create(&monitor, NULL, monitor_thread, &m);

	for (;;) {
		int ret = __vcpu_run(b->vcpu);
		uint64_t exit_ns = is_user(c->kind) ? now_ns() : 0;

		if (ret < 0) {
			TEST_ASSERT(errno == EINTR, "KVM_RUN failed: %s", strerror(errno));
		} else if (run->exit_reason == KVM_EXIT_IO) {
			uint64_t cmd = get_ucall(b->vcpu, &uc);

			if (cmd == UCALL_ABORT)
				REPORT_GUEST_ASSERT(uc);
			TEST_ASSERT(cmd == UCALL_SYNC, "Unexpected ucall %lu", cmd);
			break;
		} else {
			TEST_FAIL("Unexpected exit %u (%s)", run->exit_reason,
				  exit_reason_str(run->exit_reason));
		}
		if (c->kind == S_USER) {
			/* The handler ran: the kick was ours. */
			run->immediate_exit = 0;
			if (__atomic_exchange_n(&sample_pending, 0, __ATOMIC_SEQ_CST))
				user_sample(b, &r->t, false, exit_ns);
		} else if (c->kind == S_USER_FAST && ret < 0) {
			/* Take the blocked signal, which also re-arms the timer. */
			if (sigtimedwait(&kick_set, NULL, &zero_timeout) == SIGRTMIN)
				user_sample(b, &r->t, true, exit_ns);
		}
	}
	pthread_join(monitor, NULL);
	if (is_user(c->kind))
		timer_delete(m.timer);
	if (c->kind == S_USER_FAST)
		user_fast_setup(b, false);
	run->immediate_exit = 0;

	/* The leaf recorded the frames before it started counting. */
	read_expect(b, &e, c->depth);
	if (kernel) {
		ksampler_parse(&k, c, &e, &r->t);
		ksampler_close(&k);
	}
	if (is_user(c->kind))
		user_parse(&e, &r->t);

	if (phases_file) {
		int p;

		for (p = 0; p < m.phases; p++)
			fprintf(phases_file, "%d,%d,%d,%lu,%lu,%lu\n", r->run, p,
				p % 4 == 1 || p % 4 == 2, m.tsc[p], m.tsc[p + 1], m.phase_work[p]);
		fflush(phases_file);
	}

	r->pages = e.pages;
	r->on_s = m.ns[1] / 1e9;
	r->off_s = m.ns[0] / 1e9;
	r->work_on = m.work[1];
	r->work_off = m.work[0];
	r->on_per_s = m.work[1] / r->on_s;
	r->off_per_s = m.work[0] / r->off_s;
	r->rel_pooled = r->on_per_s / r->off_per_s;
	r->rel = upper_quartile(&m, true) / upper_quartile(&m, false);
}

/* ------------------------------------------------------------------------
 * The pieces of a userspace sample, timed one by one with the guest stopped
 * in its work loop (after a run): what each step costs here.
 */
static void keep_min(double *min, double value)
{
	if (value < *min)
		*min = value;
}

static void micro(struct bench *b, const struct config *c)
{
	struct kvm_run *run = b->vcpu->run;
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	uint64_t chain[MAX_DEPTH + 1], t0;
	struct uwalk w = { .b = b, .sregs = &sregs };
	int i, n = 200, nr = 0, batch;
	double us[7] = { 1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 1e9 };

	/* Stop the guest inside its loop: a run that the host interrupts. */
	*b->depth = c->depth;
	*b->sparse = c->sparse;
	*b->stop = 0;
	run->immediate_exit = 0;
	{
		struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGRTMIN };
		struct itimerspec its = { .it_value = { .tv_nsec = 50 * 1000 * 1000 } };
		timer_t timer;

		sev._sigev_un._tid = b->tid;
		TEST_ASSERT(!timer_create(CLOCK_MONOTONIC, &sev, &timer), "timer_create failed");
		TEST_ASSERT(!timer_settime(timer, 0, &its, NULL), "timer_settime failed");
		TEST_ASSERT(__vcpu_run(b->vcpu) < 0 && errno == EINTR, "KVM_RUN was not interrupted");
		timer_delete(timer);
		run->immediate_exit = 0;
		sample_pending = 0;
	}

	/*
	 * Ten interleaved batches of each piece, the fastest batch of each: the
	 * host deschedules QEMU at random, which only ever adds time.
	 */
	for (batch = 0; batch < 10; batch++) {
		t0 = now_ns();
		for (i = 0; i < n; i++)
			TEST_ASSERT(!ioctl(b->vcpu->fd, KVM_GET_REGS, &regs), "KVM_GET_REGS failed");
		keep_min(&us[0], (now_ns() - t0) / 1e3 / n);
		t0 = now_ns();
		for (i = 0; i < n; i++)
			TEST_ASSERT(!ioctl(b->vcpu->fd, KVM_GET_SREGS, &sregs), "KVM_GET_SREGS failed");
		keep_min(&us[1], (now_ns() - t0) / 1e3 / n);
		t0 = now_ns();
		for (i = 0; i < n; i++)
			nr = uwalk_chain(&w, &regs, chain);
		keep_min(&us[2], (now_ns() - t0) / 1e3 / n);
		/* Enter and leave KVM_RUN without running the guest. */
		t0 = now_ns();
		for (i = 0; i < n; i++) {
			run->immediate_exit = 1;
			TEST_ASSERT(__vcpu_run(b->vcpu) < 0 && errno == EINTR, "KVM_RUN didn't exit");
		}
		keep_min(&us[3], (now_ns() - t0) / 1e3 / n);
		run->immediate_exit = 0;
		/* A signal to this thread and its handler. */
		t0 = now_ns();
		for (i = 0; i < n; i++)
			syscall(__NR_tgkill, getpid(), b->tid, SIGRTMIN);
		keep_min(&us[4], (now_ns() - t0) / 1e3 / n);
		run->immediate_exit = 0;
		sample_pending = 0;
		/* The same signal, blocked, and taken with sigtimedwait(). */
		TEST_ASSERT(!pthread_sigmask(SIG_BLOCK, &kick_set, NULL), "pthread_sigmask failed");
		t0 = now_ns();
		for (i = 0; i < n; i++) {
			syscall(__NR_tgkill, getpid(), b->tid, SIGRTMIN);
			TEST_ASSERT(sigtimedwait(&kick_set, NULL, &zero_timeout) == SIGRTMIN,
				    "sigtimedwait failed");
		}
		keep_min(&us[5], (now_ns() - t0) / 1e3 / n);
		TEST_ASSERT(!pthread_sigmask(SIG_UNBLOCK, &kick_set, NULL), "pthread_sigmask failed");
		/* KVM_RUN in and out, storing regs and sregs in kvm_run. */
		run->kvm_valid_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
		t0 = now_ns();
		for (i = 0; i < n; i++) {
			run->immediate_exit = 1;
			TEST_ASSERT(__vcpu_run(b->vcpu) < 0 && errno == EINTR, "KVM_RUN didn't exit");
		}
		keep_min(&us[6], (now_ns() - t0) / 1e3 / n);
		run->kvm_valid_regs = 0;
		run->immediate_exit = 0;
	}

	for (i = 0; i < 2; i++)
		fprintf(i ? results_file : stdout,
			"%s%s d=%d: KVM_GET_REGS %.2f us, KVM_GET_SREGS %.2f us, walk of %d "
			"entries %.2f us (%lu translations), KVM_RUN with immediate_exit %.2f us "
			"(%.2f us with sync regs), tgkill+handler %.2f us, "
			"tgkill+sigtimedwait %.2f us\n", i ? "# micro: " : "micro: ",
			c->sparse ? "sparse" : "dense", c->depth, us[0], us[1], nr, us[2],
			w.translations / (10 * n), us[3], us[6], us[4], us[5]);

	/* Let the guest finish its loop. */
	*b->stop = 1;
	for (;;) {
		struct ucall uc;

		if (__vcpu_run(b->vcpu) < 0)
			continue;
		TEST_ASSERT(get_ucall(b->vcpu, &uc) == UCALL_SYNC, "Unexpected exit");
		break;
	}
}

/* ------------------------------------------------------------------------
 * Output.
 */
static const char *shape_name(const struct config *c)
{
	return c->sparse ? "sparse" : "dense";
}

static void write_header(void)
{
	fprintf(results_file,
		"run,rep,shape,depth,sampler,rate_hz,on_s,off_s,work_on,work_off,work_on_per_s,"
		"work_off_per_s,rel_throughput,rel_pooled,samples,samples_per_s,guest_samples,in_loop,"
		"complete,complete_frac,lost,stack_pages,translations_per_sample,"
		"handle_us_per_sample\n");
	fflush(results_file);
}

static void write_result(const struct result *r)
{
	const struct tally *t = &r->t;
	bool chain = has_chain(r->c.kind);

	fprintf(results_file,
		"%d,%d,%s,%d,%s,%d,%.4f,%.4f,%lu,%lu,%.1f,%.1f,%.5f,%.5f,%lu,%.1f,%lu,%lu,%lu,",
		r->run, r->rep, shape_name(&r->c), r->c.depth, sampler_name[r->c.kind], r->c.rate,
		r->on_s, r->off_s, r->work_on, r->work_off, r->on_per_s, r->off_per_s, r->rel,
		r->rel_pooled,
		t->samples, t->samples / r->on_s, t->guest, t->in_loop, t->complete);
	if (chain && t->in_loop)
		fprintf(results_file, "%.4f,", (double)t->complete / t->in_loop);
	else
		fprintf(results_file, ",");
	fprintf(results_file, "%lu,%d,", t->lost, r->pages);
	if (is_user(r->c.kind) && t->samples)
		fprintf(results_file, "%.2f,%.2f\n", (double)t->translations / t->samples,
			t->handle_ns / 1e3 / t->samples);
	else
		fprintf(results_file, ",\n");
	fflush(results_file);
}

static void print_result(const struct result *r, int index, int total)
{
	const struct tally *t = &r->t;

	printf("[%3d/%d] rep %d %-6s d=%-2d %-12s %5d Hz: %6.1f/%6.1f Mwork/s, on/off %.3f "
	       "(pooled %.3f)", index, total, r->rep, shape_name(&r->c), r->c.depth,
	       sampler_name[r->c.kind], r->c.rate, r->on_per_s / 1e6, r->off_per_s / 1e6, r->rel,
	       r->rel_pooled);
	if (r->c.kind != S_NONE) {
		printf(", %.0f samples/s", t->samples / r->on_s);
		if (has_chain(r->c.kind) && t->in_loop)
			printf(", %.1f%% complete", 100.0 * t->complete / t->in_loop);
		if (t->lost)
			printf(", %lu LOST", t->lost);
		if (is_user(r->c.kind) && t->samples)
			printf(", %.1f us/sample in VMM", t->handle_ns / 1e3 / t->samples);
	}
	printf("\n");
	fflush(stdout);
}

/* ------------------------------------------------------------------------
 * Set-up.
 */
static char knob_saved;

static char knob_read(void)
{
	char value = 0;
	int fd = open(KNOB_PATH, O_RDONLY);

	if (fd < 0)
		return 0;
	if (read(fd, &value, 1) != 1)
		value = 0;
	close(fd);
	return value;
}

static bool knob_write(char value)
{
	int fd = open(KNOB_PATH, O_WRONLY);
	bool ok;

	if (fd < 0)
		return false;
	ok = write(fd, &value, 1) == 1;
	close(fd);
	return ok && knob_read() == value;
}

static void knob_restore(void)
{
	if (knob_saved && !knob_write(knob_saved))
		fprintf(stderr, "Failed to restore %s to '%c'\n", KNOB_PATH, knob_saved);
}

static long read_long(const char *path)
{
	long value = -1;
	FILE *f = fopen(path, "r");

	if (f) {
		if (fscanf(f, "%ld", &value) != 1)
			value = -1;
		fclose(f);
	}
	return value;
}

static double tsc_mhz;

static void measure_tsc(void)
{
	uint64_t t0 = now_ns(), c0 = bench_rdtsc();

	usleep(100000);
	tsc_mhz = (bench_rdtsc() - c0) * 1e3 / (now_ns() - t0);
}

static void describe(FILE *f, const char *prefix)
{
	struct utsname u;

	uname(&u);
	fprintf(f, "%skernel=%s %s\n", prefix, u.release, u.version);
	fprintf(f, "%scpus=%ld\n", prefix, sysconf(_SC_NPROCESSORS_ONLN));
	fprintf(f, "%sperf_event_max_stack=%ld\n", prefix, read_long(MAX_STACK_PATH));
	fprintf(f, "%sperf_event_max_sample_rate=%ld\n", prefix,
		read_long("/proc/sys/kernel/perf_event_max_sample_rate"));
	fprintf(f, "%sperf_cpu_time_max_percent=%ld\n", prefix,
		read_long("/proc/sys/kernel/perf_cpu_time_max_percent"));
	fprintf(f, "%senable_guest_callchains=%c\n", prefix, knob_read() ?: '-');
	fprintf(f, "%swarmup_s=%.2f\n%smeasured_s=%.2f (off/on phases)\n", prefix, warmup_s,
		prefix, duration_s);
	fprintf(f, "%sphase_ms=%.0f\n%stsc_mhz=%.1f\n", prefix, phase_s * 1e3, prefix, tsc_mhz);
}

#define MAX_CONFIGS	256

static int add(struct config *list, int n, bool sparse, int depth, enum sampler_kind kind,
	       int rate)
{
	TEST_ASSERT(n < MAX_CONFIGS, "Too many configurations");
	list[n] = (struct config){ .sparse = sparse, .depth = depth, .kind = kind, .rate = rate };
	return n + 1;
}

/*
 * A block per stack shape: the control, then the sampled runs.  Even
 * repetitions run the blocks, and the runs inside each block,
 * in reverse order, so that slow drift hits all configurations alike.
 */
static int plan_block(struct config *list, int n, bool sparse, int depth,
		      const int *rates, int nr_rates, bool reverse)
{
	struct config sampled[64];
	int i, j, m = 0;

	for (i = 0; i < nr_rates; i++)
		for (j = S_KERNEL_IP; j <= S_USER_FAST; j++)
			sampled[m++] = (struct config){ sparse, depth, j, rates[i] };

	/* The control: "on" and "off" phases both without sampling. */
	n = add(list, n, sparse, depth, S_NONE, 0);
	for (i = 0; i < m; i++)
		list[n++] = sampled[reverse ? m - 1 - i : i];
	return n;
}

static int plan_full(struct config *list, bool reverse)
{
	static const int rates[] = { 250, 1000, 5000, 10000, 20000 };
	static const int sparse_rates[] = { 1000, 5000 };
	struct config blocks[3][64];
	int sizes[3], i, n = 0;

	sizes[0] = plan_block(blocks[0], 0, false, 8, rates, ARRAY_SIZE(rates), reverse);
	sizes[1] = plan_block(blocks[1], 0, false, 64, rates, ARRAY_SIZE(rates), reverse);
	sizes[2] = plan_block(blocks[2], 0, true, 64, sparse_rates, ARRAY_SIZE(sparse_rates),
			      reverse);
	for (i = 0; i < 3; i++) {
		int blk = reverse ? 2 - i : i;

		memcpy(&list[n], blocks[blk], sizes[blk] * sizeof(list[0]));
		n += sizes[blk];
	}
	return n;
}

/* ------------------------------------------------------------------------
 * --host-clock PID DIR, run on the host while L1 runs the benchmark: QEMU's
 * vCPU thread's CPU time against the host's TSC, every millisecond, and the
 * host's TSC when L1 rewrites DIR/sync (with L1's TSC in it).  Written to
 * DIR/hostclock.csv and DIR/sync.csv when QEMU is gone.
 */
#include <poll.h>
#include <sys/inotify.h>

static uint64_t thread_runtime(int fd)
{
	char text[128];
	ssize_t len = pread(fd, text, sizeof(text) - 1, 0);

	if (len <= 0)
		return 0;
	text[len] = 0;
	return strtoull(text, NULL, 10);
}


/* Append the pair (@a, @b) to @pairs, of *@nr pairs out of room for *@cap. */
static uint64_t *append_pair(uint64_t *pairs, size_t *nr, size_t *cap,
			     uint64_t a, uint64_t b)
{
	if (*nr == *cap) {
		*cap *= 2;
		pairs = realloc(pairs, *cap * 2 * sizeof(uint64_t));
		TEST_ASSERT(pairs, "realloc failed");
	}
	pairs[2 * *nr] = a;
	pairs[2 * *nr + 1] = b;
	(*nr)++;
	return pairs;
}
static int host_clock(pid_t pid, const char *dir)
{
	size_t nr = 0, cap = 1 << 20, nr_sync = 0, cap_sync = 4096;
	uint64_t *clock = malloc(cap * 2 * sizeof(uint64_t));
	uint64_t *sync = malloc(cap_sync * 2 * sizeof(uint64_t));
	uint64_t last_sync = 0, best = 0;
	char path[4096], sync_file[4096];
	int fd = -1, ino, i;
	pid_t tcg = 0;
	FILE *f;

	TEST_ASSERT(clock && sync, "Allocating the host clock failed");
	snprintf(sync_file, sizeof(sync_file), "%s/sync", dir);
	ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	TEST_ASSERT(ino >= 0 && inotify_add_watch(ino, dir, IN_MODIFY | IN_CLOSE_WRITE) >= 0,
		    "inotify on %s failed", dir);

	/* The vCPU thread (one, thread=single) is the one that ran the most. */
	while (!tcg) {
		char task[4096];
		struct dirent *d;
		DIR *tasks;

		snprintf(task, sizeof(task), "/proc/%d/task", pid);
		tasks = opendir(task);
		if (!tasks)
			return 1;
		while ((d = readdir(tasks))) {
			int tfd;
			uint64_t rt;

			if (d->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", pid, d->d_name);
			tfd = open(path, O_RDONLY);
			if (tfd < 0)
				continue;
			rt = thread_runtime(tfd);
			close(tfd);
			if (rt > best) {
				best = rt;
				tcg = atoi(d->d_name);
			}
		}
		closedir(tasks);
		if (best < 3000000000ull) {
			tcg = 0;
			best = 0;
			usleep(200000);
		}
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", pid, tcg);
	fd = open(path, O_RDONLY);
	TEST_ASSERT(fd >= 0, "Opening %s failed", path);
	printf("host-clock: QEMU %d, vCPU thread %d\n", pid, tcg);
	fflush(stdout);

	for (;;) {
		struct pollfd pfd = { .fd = ino, .events = POLLIN };
		uint64_t tsc, rt;

		if (poll(&pfd, 1, 1) > 0) {
			char events[4096];
			char text[64] = "";
			int sfd;
			ssize_t len;

			tsc = bench_rdtsc();
			while (read(ino, events, sizeof(events)) > 0)
				;
			sfd = open(sync_file, O_RDONLY);
			if (sfd >= 0) {
				len = read(sfd, text, sizeof(text) - 1);
				close(sfd);
				text[len > 0 ? len : 0] = 0;
			}
			if (strtoull(text, NULL, 10) && strtoull(text, NULL, 10) != last_sync) {
				last_sync = strtoull(text, NULL, 10);
				sync = append_pair(sync, &nr_sync, &cap_sync, last_sync, tsc);
			}
		}
		tsc = bench_rdtsc();
		rt = thread_runtime(fd);
		if (!rt && kill(pid, 0))
			break;
		clock = append_pair(clock, &nr, &cap, tsc, rt);
	}

	snprintf(path, sizeof(path), "%s/hostclock.csv", dir);
	f = fopen(path, "w");
	TEST_ASSERT(f, "Can't write %s", path);
	fprintf(f, "host_tsc,vcpu_thread_ns\n");
	for (i = 0; i < nr; i++)
		fprintf(f, "%lu,%lu\n", clock[2 * i], clock[2 * i + 1]);
	fclose(f);
	snprintf(path, sizeof(path), "%s/sync.csv", dir);
	f = fopen(path, "w");
	TEST_ASSERT(f, "Can't write %s", path);
	fprintf(f, "l1_tsc,host_tsc\n");
	for (i = 0; i < nr_sync; i++)
		fprintf(f, "%lu,%lu\n", sync[2 * i], sync[2 * i + 1]);
	fclose(f);
	printf("host-clock: %zu samples, %zu sync marks\n", nr, nr_sync);
	return 0;
}

static void help(const char *name)
{
	printf("usage: %s [--smoke] [-o results.csv] [-r reps] [-d seconds] [-w warmup_s]\n"
	       "          [-p phase_s] [-T] [--only SAMPLER:DEPTH:RATE[:sparse]]\n"
	       "       %s --host-clock QEMU_PID DIR\n", name, name);
}

int main(int argc, char *argv[])
{
	static const struct option options[] = {
		{ "smoke", no_argument, NULL, 's' },
		{ "only", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	static struct config plan[MAX_CONFIGS];
	static struct result results[MAX_CONFIGS];
	struct sigaction sa = { .sa_handler = kick_handler };
	bool smoke = false, ok = true;
	struct config only = {};
	int reps = 5, opt, rep, i, n = 0, index = 0, total;
	char default_path[4096];
	struct bench b = {};
	struct config warm;
	struct result scratch;
	uint64_t start;

	if (argc == 4 && !strcmp(argv[1], "--host-clock"))
		return host_clock(atoi(argv[2]), argv[3]);

	while ((opt = getopt_long(argc, argv, "o:r:d:w:p:Th", options, NULL)) != -1) {
		switch (opt) {
		case 's':
			smoke = true;
			break;
		case 'O': {
			char name[32] = "", shape[16] = "dense";
			int depth = 0, rate = 0, k;

			/* SAMPLER:DEPTH:RATE[:sparse], e.g. kernel-chain:64:5000 */
			if (sscanf(optarg, "%31[^:]:%d:%d:%15s", name, &depth, &rate, shape) < 3 ||
			    depth < 3 || depth > 64) {
				help(argv[0]);
				exit(1);
			}
			for (k = 0; k < ARRAY_SIZE(sampler_name); k++)
				if (!strcmp(name, sampler_name[k]))
					break;
			TEST_ASSERT(k < ARRAY_SIZE(sampler_name), "No sampler %s", name);
			only = (struct config){ !strcmp(shape, "sparse"), depth, k, rate };
			break;
		}
		case 'o':
			results_path = optarg;
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		case 'd':
			duration_s = atof(optarg);
			break;
		case 'w':
			warmup_s = atof(optarg);
			break;
		case 'p':
			phase_s = atof(optarg);
			break;
		case 'T':
			trace_phases = true;
			break;
		default:
			help(argv[0]);
			exit(opt == 'h' ? 0 : 1);
		}
	}
	if (smoke) {
		reps = 1;
		duration_s = 1.0;
		warmup_s = 0.2;
	}
	if (!results_path) {
		const char *dir = getenv("L1_RESULTS");

		snprintf(default_path, sizeof(default_path), "%s/%s", dir ? dir : ".",
			 smoke ? "smoke.csv" : "results.csv");
		results_path = default_path;
	}

	__TEST_REQUIRE(!access(KNOB_PATH, F_OK), "%s not found: no guest call chains", KNOB_PATH);
	knob_saved = knob_read();
	atexit(knob_restore);
	TEST_ASSERT(knob_write('Y'), "Can't set %s to Y", KNOB_PATH);
	max_stack = read_long(MAX_STACK_PATH);
	TEST_ASSERT(max_stack >= 66 && max_stack <= MAX_DEPTH,
		    "perf_event_max_stack %u: need 66..%d for 64-frame chains", max_stack, MAX_DEPTH);

	{
		struct config fastest = { .rate = 20000 };

		user_ring_words = ring_need(&fastest, 64 + 2);
		user_ring = malloc(user_ring_words * sizeof(uint64_t));
		TEST_ASSERT(user_ring, "Allocating the user ring failed");
		memset(user_ring, 0, user_ring_words * sizeof(uint64_t));
	}
	sigemptyset(&sa.sa_mask);
	TEST_ASSERT(!sigaction(SIGRTMIN, &sa, NULL), "sigaction failed");
	sigemptyset(&kick_set);
	sigaddset(&kick_set, SIGRTMIN);

	/*
	 * All threads on one CPU, the last: the timers that drive both samplers
	 * then fire where the vCPU thread runs, run after run.
	 */
	{
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(sysconf(_SC_NPROCESSORS_ONLN) - 1, &set);
		TEST_ASSERT(!sched_setaffinity(0, sizeof(set), &set), "sched_setaffinity failed");
	}

	results_file = fopen(results_path, "w");
	TEST_ASSERT(results_file, "Can't write %s", results_path);
	{
		static char dir[4096], path[4096], sync[4096];
		char *slash;

		snprintf(dir, sizeof(dir), "%s", results_path);
		slash = strrchr(dir, '/');
		if (slash)
			*slash = 0;
		else
			strcpy(dir, ".");
		snprintf(path, sizeof(path), "%s/%s", dir, smoke ? "smoke-phases.csv" : "phases.csv");
		phases_file = fopen(path, "w");
		TEST_ASSERT(phases_file, "Can't write %s", path);
		fprintf(phases_file, "run,phase,on,l1_tsc_start,l1_tsc_end,work\n");
		snprintf(sync, sizeof(sync), "%s/sync", dir);
		sync_path = sync;
	}
	measure_tsc();
	describe(results_file, "# ");
	describe(stdout, "bench: ");
	write_header();

	bench_create(&b);
	kick_run = b.vcpu->run;

	/* Fault the guest's code, data and whole stack in once. */
	warm = (struct config){ .sparse = true, .depth = 64, .kind = S_NONE };
	{
		double d = duration_s, w = warmup_s;

		duration_s = 0.1;
		warmup_s = 0.05;
		run_config(&b, &warm, 0, &scratch);
		warm.sparse = false;
		run_config(&b, &warm, 0, &scratch);
		duration_s = d;
		warmup_s = w;
	}

	{
		struct config c1 = { .depth = 8 }, c2 = { .depth = 64 }, c3 = { .sparse = true, .depth = 64 };

		if (!only.depth)
			micro(&b, &c1);
		if (!smoke && !only.depth) {
			micro(&b, &c2);
			micro(&b, &c3);
		}
	}

	start = now_ns();
	if (smoke) {
		n = 0;
		n = add(plan, n, false, 8, S_NONE, 0);
		n = add(plan, n, false, 8, S_KERNEL_CHAIN, 1000);
		n = add(plan, n, false, 8, S_USER, 1000);
		n = add(plan, n, false, 8, S_USER_FAST, 1000);
		total = n;
	} else if (only.depth) {
		n = add(plan, 0, only.sparse, only.depth, only.kind, only.rate);
		total = reps;
	} else {
		total = reps * plan_full(plan, false);
	}
	printf("bench: %d runs of %.2f s (+%.2f s warm-up)\n", total, duration_s, warmup_s);

	for (rep = 1; rep <= reps; rep++) {
		if (!smoke && !only.depth)
			n = plan_full(plan, !(rep % 2));
		for (i = 0; i < n; i++) {
			struct result *r = &results[i];

			run_config(&b, &plan[i], rep, r);
			write_result(r);
			print_result(r, ++index, total);
		}
	}
	printf("bench: %d runs in %.1f s, results in %s\n", total, (now_ns() - start) / 1e9,
	       results_path);

	if (smoke) {
		for (i = 0; i < n; i++) {
			const struct result *r = &results[i];
			const struct tally *t = &r->t;
			bool chain = has_chain(r->c.kind);
			double frac = t->in_loop ? (double)t->complete / t->in_loop : 0;

			if (!r->work_on || !r->work_off) {
				printf("smoke: FAIL %s: no work done\n", sampler_name[r->c.kind]);
				ok = false;
			}
			if (r->c.kind != S_NONE && !t->samples) {
				printf("smoke: FAIL %s: no samples\n", sampler_name[r->c.kind]);
				ok = false;
			}
			if (chain && frac <= 0.9) {
				printf("smoke: FAIL %s: %.3f of the samples have the complete chain\n",
				       sampler_name[r->c.kind], frac);
				ok = false;
			}
		}
		printf("smoke: %s\n", ok ? "PASS" : "FAIL");
	}

	fclose(results_file);
	kvm_vm_free(b.vm);
	return ok ? 0 : 1;
}
