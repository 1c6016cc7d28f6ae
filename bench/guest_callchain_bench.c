// SPDX-License-Identifier: GPL-2.0-only
/*
 * Guest call-chain sampling: in the kernel (kvm.enable_guest_callchains) or
 * in the VMM, side by side, on one guest workload in one process.
 *
 * The guest recurses to a given depth (dense frames, or one frame per page)
 * and then spins incrementing a counter in guest memory: the counter's rate
 * is the work the guest gets done.  Each run lasts a fixed wall time under
 * one of these samplers of the vCPU thread:
 *
 *  none          no sampling (the baseline, run at both ends of each block)
 *  kernel-ip     cpu-clock perf event, PERF_SAMPLE_IP|PERF_SAMPLE_TID
 *  kernel-chain  the same plus PERF_SAMPLE_CALLCHAIN, knob Y: the kernel walks
 *                the guest's page tables and frame pointers in the sample
 *  user          what userspace can do today: a POSIX timer signals the vCPU
 *                thread (SIGEV_THREAD_ID), KVM_RUN returns -EINTR (the handler
 *                sets kvm_run.immediate_exit, as QEMU kicks vCPUs), the VMM
 *                reads KVM_GET_REGS and KVM_GET_SREGS, walks the guest's page
 *                tables from CR3 and the frame-pointer chain from RBP in its
 *                own mapping of guest memory (the same algorithm, bounds and
 *                one-page translation cache as the kernel), stores the chain
 *                in a ring and re-enters KVM_RUN.
 *
 * The perf ring is big enough for the whole run and is read after it, and the
 * work counter is read by a thread that sleeps in between: nothing else runs
 * while a run is measured (L1 has one CPU).
 *
 *   guest_callchain_bench [-o results.csv] [-r reps] [-d seconds] [-w seconds]
 *   guest_callchain_bench --smoke
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
enum sampler_kind { S_NONE, S_KERNEL_IP, S_KERNEL_CHAIN, S_USER };
static const char * const sampler_name[] = { "none", "kernel-ip", "kernel-chain", "user" };

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
	int rep;
	double active_s;		/* sampler on */
	double window_s;		/* work measured */
	uint64_t work;
	double work_per_s;
	struct tally t;
	int pages;
};

static const char *results_path;
static FILE *results_file;
static uint32_t max_stack = 127;
static double duration_s = 2.0, warmup_s = 0.3;

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
 * Where the userspace sampler records its chains, as perf has its ring:
 * [nr, ip, return addresses...] per sample, checked after the run.  Sized
 * for the longest run and faulted in once.
 */
static uint64_t *user_ring;
static uint64_t user_ring_words;
static uint64_t user_ring_head;

static void user_sample(struct bench *b, struct tally *t)
{
	uint64_t *chain = &user_ring[user_ring_head + 1], start = now_ns();
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	struct uwalk w = { .b = b, .sregs = &sregs };
	int nr;

	TEST_ASSERT(!ioctl(b->vcpu->fd, KVM_GET_REGS, &regs), "KVM_GET_REGS failed");
	TEST_ASSERT(!ioctl(b->vcpu->fd, KVM_GET_SREGS, &sregs), "KVM_GET_SREGS failed");

	t->samples++;
	if (user_ring_head + 1 + max_stack > user_ring_words) {
		t->lost++;
	} else {
		nr = uwalk_chain(&w, &regs, chain);
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
struct monitor {
	struct bench *b;
	uint64_t c0, c1, t0, t1;
};

static void sleep_until(uint64_t ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000ull, .tv_nsec = ns % 1000000000ull };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void *monitor_thread(void *arg)
{
	struct monitor *m = arg;
	uint64_t start = now_ns();

	sleep_until(start + warmup_s * 1e9);
	m->t0 = now_ns();
	m->c0 = __atomic_load_n(m->b->counter, __ATOMIC_RELAXED);
	sleep_until(m->t0 + duration_s * 1e9);
	m->t1 = now_ns();
	m->c1 = __atomic_load_n(m->b->counter, __ATOMIC_RELAXED);
	__atomic_store_n(m->b->stop, 1, __ATOMIC_RELAXED);
	return NULL;
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

static void run_config(struct bench *b, const struct config *c, int rep, struct result *r)
{
	struct kvm_run *run = b->vcpu->run;
	struct ksampler k = {};
	struct monitor m = { .b = b };
	struct expect e;
	struct ucall uc;
	pthread_t monitor;
	timer_t timer;
	uint64_t on, off;
	bool kernel = c->kind == S_KERNEL_IP || c->kind == S_KERNEL_CHAIN;

	memset(r, 0, sizeof(*r));
	r->c = *c;
	r->rep = rep;

	*b->depth = c->depth;
	*b->sparse = c->sparse;
	*b->stop = 0;
	*b->counter = 0;

	if (kernel)
		ksampler_open(&k, c);
	if (c->kind == S_USER) {
		struct sigevent sev = {
			.sigev_notify = SIGEV_THREAD_ID,
			.sigev_signo = SIGRTMIN,
		};

		sev._sigev_un._tid = b->tid;
		TEST_ASSERT(!timer_create(CLOCK_MONOTONIC, &sev, &timer), "timer_create failed");
		__atomic_store_n(&sample_pending, 0, __ATOMIC_SEQ_CST);
		run->immediate_exit = 0;
		user_ring_head = 0;
		TEST_ASSERT(ring_need(c, c->depth + 2) <= user_ring_words,
			    "User ring too small for %d Hz", c->rate);
	}

	pthread_create(&monitor, NULL, monitor_thread, &m);

	on = now_ns();
	if (kernel)
		TEST_ASSERT(!ioctl(k.fd, PERF_EVENT_IOC_ENABLE, 0), "Enabling perf failed");
	if (c->kind == S_USER) {
		long ns = 1000000000l / c->rate;
		struct itimerspec its = {
			.it_interval = { .tv_sec = ns / 1000000000l, .tv_nsec = ns % 1000000000l },
			.it_value = { .tv_sec = ns / 1000000000l, .tv_nsec = ns % 1000000000l },
		};

		TEST_ASSERT(!timer_settime(timer, 0, &its, NULL), "timer_settime failed");
	}

	for (;;) {
		int ret = __vcpu_run(b->vcpu);

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
			run->immediate_exit = 0;
			if (__atomic_exchange_n(&sample_pending, 0, __ATOMIC_SEQ_CST))
				user_sample(b, &r->t);
		}
	}

	if (kernel)
		TEST_ASSERT(!ioctl(k.fd, PERF_EVENT_IOC_DISABLE, 0), "Disabling perf failed");
	if (c->kind == S_USER)
		timer_delete(timer);
	off = now_ns();
	pthread_join(monitor, NULL);

	/* The leaf recorded the frames before it started counting. */
	read_expect(b, &e, c->depth);
	if (kernel) {
		ksampler_parse(&k, c, &e, &r->t);
		ksampler_close(&k);
	}
	if (c->kind == S_USER)
		user_parse(&e, &r->t);

	r->pages = e.pages;
	r->active_s = (off - on) / 1e9;
	r->window_s = (m.t1 - m.t0) / 1e9;
	r->work = m.c1 - m.c0;
	r->work_per_s = r->work / r->window_s;
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
		"rep,shape,depth,sampler,rate_hz,active_s,window_s,work,work_per_s,"
		"samples,samples_per_s,guest_samples,in_loop,complete,complete_frac,lost,"
		"stack_pages,translations_per_sample,handle_us_per_sample\n");
	fflush(results_file);
}

static void write_result(const struct result *r)
{
	const struct tally *t = &r->t;
	bool chain = r->c.kind == S_KERNEL_CHAIN || r->c.kind == S_USER;

	fprintf(results_file, "%d,%s,%d,%s,%d,%.4f,%.4f,%lu,%.1f,%lu,%.1f,%lu,%lu,%lu,",
		r->rep, shape_name(&r->c), r->c.depth, sampler_name[r->c.kind], r->c.rate,
		r->active_s, r->window_s, r->work, r->work_per_s, t->samples,
		t->samples / r->active_s, t->guest, t->in_loop, t->complete);
	if (chain && t->in_loop)
		fprintf(results_file, "%.4f,", (double)t->complete / t->in_loop);
	else
		fprintf(results_file, ",");
	fprintf(results_file, "%lu,%d,", t->lost, r->pages);
	if (r->c.kind == S_USER && t->samples)
		fprintf(results_file, "%.2f,%.2f\n", (double)t->translations / t->samples,
			t->handle_ns / 1e3 / t->samples);
	else
		fprintf(results_file, ",\n");
	fflush(results_file);
}

static void print_result(const struct result *r, double baseline, int index, int total)
{
	const struct tally *t = &r->t;

	printf("[%3d/%d] rep %d %-6s d=%-2d %-12s %5d Hz: %6.2f Mwork/s",
	       index, total, r->rep, shape_name(&r->c), r->c.depth, sampler_name[r->c.kind],
	       r->c.rate, r->work_per_s / 1e6);
	if (baseline > 0 && r->c.kind != S_NONE)
		printf(" (%.3f of none)", r->work_per_s / baseline);
	if (r->c.kind != S_NONE) {
		printf(", %.0f samples/s", t->samples / r->active_s);
		if ((r->c.kind == S_KERNEL_CHAIN || r->c.kind == S_USER) && t->in_loop)
			printf(", %.1f%% complete", 100.0 * t->complete / t->in_loop);
		if (t->lost)
			printf(", %lu LOST", t->lost);
		if (r->c.kind == S_USER && t->samples)
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
	fprintf(f, "%swarmup_s=%.2f\n%swindow_s=%.2f\n", prefix, warmup_s, prefix, duration_s);
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
 * A block per stack shape: the baseline at both ends, the sampled runs in
 * between.  Odd repetitions run the blocks, and the runs inside each block,
 * in reverse order, so that slow drift hits all configurations alike.
 */
static int plan_block(struct config *list, int n, bool sparse, int depth,
		      const int *rates, int nr_rates, bool reverse)
{
	struct config sampled[64];
	int i, j, m = 0;

	for (i = 0; i < nr_rates; i++)
		for (j = S_KERNEL_IP; j <= S_USER; j++)
			sampled[m++] = (struct config){ sparse, depth, j, rates[i] };

	n = add(list, n, sparse, depth, S_NONE, 0);
	for (i = 0; i < m; i++)
		list[n++] = sampled[reverse ? m - 1 - i : i];
	return add(list, n, sparse, depth, S_NONE, 0);
}

static int plan_full(struct config *list, bool reverse)
{
	static const int rates[] = { 1000, 5000, 10000, 20000 };
	static const int sparse_rates[] = { 10000, 20000 };
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

static void help(const char *name)
{
	printf("usage: %s [--smoke] [-o results.csv] [-r reps] [-d window_s] [-w warmup_s]\n",
	       name);
}

int main(int argc, char *argv[])
{
	static const struct option options[] = {
		{ "smoke", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	static struct config plan[MAX_CONFIGS];
	static struct result results[MAX_CONFIGS];
	struct sigaction sa = { .sa_handler = kick_handler };
	bool smoke = false, ok = true;
	int reps = 3, opt, rep, i, n, index = 0, total;
	char default_path[4096];
	struct bench b = {};
	struct config warm;
	struct result scratch;
	uint64_t start;

	while ((opt = getopt_long(argc, argv, "o:r:d:w:h", options, NULL)) != -1) {
		switch (opt) {
		case 's':
			smoke = true;
			break;
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

	results_file = fopen(results_path, "w");
	TEST_ASSERT(results_file, "Can't write %s", results_path);
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

	start = now_ns();
	if (smoke) {
		n = 0;
		n = add(plan, n, false, 8, S_NONE, 0);
		n = add(plan, n, false, 8, S_KERNEL_CHAIN, 10000);
		n = add(plan, n, false, 8, S_USER, 10000);
		total = n;
	} else {
		total = reps * plan_full(plan, false);
	}
	printf("bench: %d runs of %.2f s (+%.2f s warm-up)\n", total, duration_s, warmup_s);

	for (rep = 1; rep <= reps; rep++) {
		double baseline = 0;

		if (!smoke)
			n = plan_full(plan, !(rep % 2));
		for (i = 0; i < n; i++) {
			struct result *r = &results[i];

			run_config(&b, &plan[i], rep, r);
			/* The first baseline of a block, for the progress lines. */
			if (plan[i].kind == S_NONE && (i == 0 || plan[i - 1].kind == S_NONE))
				baseline = r->work_per_s;
			write_result(r);
			print_result(r, baseline, ++index, total);
		}
	}
	printf("bench: %d runs in %.1f s, results in %s\n", total, (now_ns() - start) / 1e9,
	       results_path);

	if (smoke) {
		for (i = 0; i < n; i++) {
			const struct result *r = &results[i];
			const struct tally *t = &r->t;
			bool chain = r->c.kind == S_KERNEL_CHAIN || r->c.kind == S_USER;
			double frac = t->in_loop ? (double)t->complete / t->in_loop : 0;

			if (!r->work) {
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
