// SPDX-License-Identifier: GPL-2.0-only
/*
 * The benchmark's guest and its VM.  The guest recurses to a given depth
 * (dense frames, or one frame per page) and then spins incrementing a
 * counter in guest memory: the counter's rate is the work the guest gets
 * done.
 */
#include <sys/syscall.h>
#include <unistd.h>

#include "bench.h"
#include "guest_callchain.h"
#include "perf_sampler.h"
#include "processor.h"
#include "ucall_common.h"

#define GUEST_STACK_SIZE	(1024 * 1024)

/* ------------------------------------------------------------------------
 * The guest.  Every function records its return address and frame, index 0
 * being the leaf's, so the host knows the exact chain to expect.
 */
static u64 work_counter;
static u64 work_stop;
static u64 shape_depth;		/* frames below guest_callchain_entry, >= 3 */
static u64 shape_sparse;		/* one frame per page */
static u64 ret_addr[MAX_DEPTH];
static u64 frame_addr[MAX_DEPTH];
static u64 loop_start;
static u64 loop_end;

#define record_frame(d)								\
do {										\
	ret_addr[d] = (u64)__builtin_return_address(0);			\
	frame_addr[d] = (u64)__builtin_frame_address(0);			\
} while (0)

static noinline void leaf(void)
{
	record_frame(0);
	guest_assert_frames(frame_addr, ret_addr, READ_ONCE(shape_depth));

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
static noinline void level_dense(u64 n)
{
	volatile u64 pad[4];

	pad[0] = n;
	record_frame(n + 1);
	if (n)
		level_dense(n - 1);
	else
		leaf();
	pad[1] = pad[0];
}

/* More than a page per frame: every frame is on a page of its own. */
static noinline void level_sparse(u64 n)
{
	volatile u8 pad[BENCH_PAGE_SIZE];

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
	u64 depth = READ_ONCE(shape_depth);

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
		guest_callchain_entry(shape_entry);
		GUEST_SYNC(0);
	}
}

void bench_create(struct bench *b)
{
	struct userspace_mem_region *region;
	struct kvm_regs regs;
	gva_t stack;
	int bkt;

	b->vm = __vm_create_with_one_vcpu(&b->vcpu, GUEST_STACK_SIZE / 4096 + 64, guest_main);
	b->tid = syscall(__NR_gettid);
	/*
	 * The module parameter is the gate; each VM opts in as well, here to
	 * call chains and to registers and stack windows.
	 */
	vm_set_guest_callchains(b->vm, 2);

	stack = vm_alloc(b->vm, GUEST_STACK_SIZE, KVM_UTIL_MIN_VADDR);
	vcpu_regs_get(b->vcpu, &regs);
	regs.rsp = stack + GUEST_STACK_SIZE - 8;
	vcpu_regs_set(b->vcpu, &regs);

	b->counter = addr_gva2hva(b->vm, (gva_t)&work_counter);
	b->stop = addr_gva2hva(b->vm, (gva_t)&work_stop);
	b->depth = addr_gva2hva(b->vm, (gva_t)&shape_depth);
	b->sparse = addr_gva2hva(b->vm, (gva_t)&shape_sparse);

	/* What a VMM knows anyway: its memslots. */
	hash_for_each(b->vm->regions.slot_hash, bkt, region, slot_node) {
		TEST_ASSERT(b->nr_slots < ARRAY_SIZE(b->slots), "Too many memslots");
		b->slots[b->nr_slots].gpa = region->region.guest_phys_addr;
		b->slots[b->nr_slots].size = region->region.memory_size;
		b->slots[b->nr_slots].hva = region->host_mem;
		b->nr_slots++;
	}
}

/* Set the guest's stack shape for the next guest_callchain_entry() and let it run. */
void bench_set_shape(struct bench *b, const struct config *c)
{
	*b->depth = c->depth;
	*b->sparse = c->sparse;
	*b->stop = 0;
	*b->counter = 0;
}

void read_expect(struct bench *b, struct expect *e, int depth)
{
	u64 pages[MAX_DEPTH];
	int i, j;

	sync_global_from_guest(b->vm, ret_addr);
	sync_global_from_guest(b->vm, frame_addr);
	sync_global_from_guest(b->vm, loop_start);
	sync_global_from_guest(b->vm, loop_end);
	e->depth = depth;
	e->loop_start = loop_start;
	e->loop_end = loop_end;
	memcpy(e->ret, ret_addr, sizeof(e->ret));
	TEST_ASSERT(ret_addr[depth - 1] == (u64)guest_callchain_entry_ret,
		    "Outermost return address 0x%lx, expected guest_callchain_entry_ret 0x%lx",
		    ret_addr[depth - 1], (u64)guest_callchain_entry_ret);
	e->pages = 0;
	for (i = 0; i < depth; i++) {
		u64 p = frame_addr[i] & BENCH_PAGE_MASK;

		for (j = 0; j < e->pages && pages[j] != p; j++)
			;
		if (j == e->pages)
			pages[e->pages++] = p;
	}
}
