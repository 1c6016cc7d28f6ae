// SPDX-License-Identifier: GPL-2.0-only
/*
 * The userspace samplers: what a VMM can do today.
 *
 *  user       a POSIX timer signals the vCPU thread (SIGEV_THREAD_ID),
 *             KVM_RUN returns -EINTR (the no-op handler sets
 *             kvm_run.immediate_exit, as QEMU kicks vCPUs), the VMM reads
 *             KVM_GET_REGS and KVM_GET_SREGS, walks the guest's page tables
 *             from CR3 and the frame-pointer chain from RBP in its own
 *             mapping of guest memory (the kernel's algorithm, bounds and
 *             one-page translation cache), stores the chain in a ring and
 *             re-enters KVM_RUN
 *  user-fast  the cheapest userspace variant we know: the signal is blocked
 *             outside KVM_RUN (KVM_SET_SIGNAL_MASK) and taken with
 *             sigtimedwait(), no handler; registers from kvm_run (sync
 *             regs), no ioctl; the same walk
 *
 * And micro(): the pieces of a userspace sample, timed one by one.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "bench.h"
#include "processor.h"
#include "ucall_common.h"

#define ADDR_MASK_4K		GENMASK_ULL(51, 12)

/* ------------------------------------------------------------------------
 * The walk: the kernel's algorithm, in the VMM.
 */
struct uwalk {
	struct bench *b;
	const struct kvm_sregs *sregs;
	bool user;
	bool cached_valid;
	u64 cached_page;
	u8 *cached_hva;
	u64 translations;
};

/* Guest physical to VMM virtual: look the address up in the memslots. */
static u8 *gpa_to_hva(struct bench *b, u64 gpa, unsigned int length)
{
	int i;

	for (i = 0; i < b->nr_slots; i++) {
		struct memslot_map *s = &b->slots[i];

		if (gpa >= s->gpa && gpa - s->gpa + length <= s->size)
			return s->hva + (gpa - s->gpa);
	}
	return NULL;
}

static bool uwalk_translate(struct uwalk *w, u64 gva, u64 *gpa)
{
	const struct kvm_sregs *sregs = w->sregs;
	int level, bits;
	u64 table, entry;
	u8 *hva;

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
	if ((u64)((s64)(gva << (64 - bits)) >> (64 - bits)) != gva)
		return false;
	table = sregs->cr3 & ADDR_MASK_4K;

	for (;; level--) {
		unsigned int shift = 12 + (level - 1) * 9;
		unsigned int index = (gva >> shift) & 511;

		hva = gpa_to_hva(w->b, table + index * 8, 8);
		if (!hva)
			return false;
		entry = READ_ONCE(*(u64 *)hva);
		if (!(entry & GUEST_PTE_PRESENT))
			return false;
		if (w->user && !(entry & GUEST_PTE_USER))
			return false;
		if (level == 1) {
			*gpa = (entry & ADDR_MASK_4K) | (gva & ~BENCH_PAGE_MASK);
			return true;
		}
		if (entry & GUEST_PTE_LARGE) {
			if (level > 3)
				return false;
			*gpa = (entry & ADDR_MASK_4K & ~GENMASK_ULL(shift - 1, 0)) |
			       (gva & GENMASK_ULL(shift - 1, 0));
			return true;
		}
		table = entry & ADDR_MASK_4K;
	}
}

static bool uwalk_read(struct uwalk *w, u64 addr, void *dest, unsigned int length)
{
	u8 *d = dest;

	while (length) {
		unsigned int chunk = BENCH_PAGE_SIZE - (addr & ~BENCH_PAGE_MASK);
		u64 gpa;

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
static int uwalk_chain(struct uwalk *w, const struct kvm_regs *regs, u64 *chain)
{
	const struct kvm_sregs *sregs = w->sregs;
	u64 word_size, code_base, stack_base, mask, fp, ip;
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
	while (fp && !(fp & (word_size - 1)) && nr < w->b->max_stack) {
		u64 next, ret;
		union {
			u32 w32[2];
			u64 w64[2];
		} frame;

		if (!uwalk_read(w, (stack_base + fp) & mask, &frame, 2 * word_size))
			break;
		next = word_size == 4 ? frame.w32[0] : frame.w64[0];
		ret = word_size == 4 ? frame.w32[1] : frame.w64[1];
		ret = (code_base + ret) & mask;
		if (ret >= (u64)PERF_CONTEXT_MAX)
			break;
		chain[nr++] = ret;
		if (next <= fp)
			break;
		fp = next;
	}
	return nr;
}

/* ------------------------------------------------------------------------
 * The kick.  A signal handler can only reach file-scope state: the flag that
 * a sample is due and the kvm_run whose immediate_exit it sets.
 */
static u32 sample_pending;
static struct kvm_run *kick_run;
static sigset_t kick_set;
static const struct timespec zero_timeout;

static void kick_handler(int sig)
{
	__atomic_store_n(&sample_pending, 1, __ATOMIC_SEQ_CST);
	kick_run->immediate_exit = 1;
}

/*
 * Where the userspace samplers record their chains, as perf has its ring:
 * [nr, ip, return addresses...] per sample, checked after the run.  Sized
 * for the longest run and faulted in once.
 */
struct user_ring {
	u64 *words;
	u64 size;
	u64 head;
};

/* Install the kick and allocate a ring of @ring_words words. */
void user_samplers_init(struct bench *b, u64 ring_words)
{
	struct sigaction sa = { .sa_handler = kick_handler };
	struct user_ring *ring = calloc(1, sizeof(*ring));

	TEST_ASSERT(ring, "Allocating the user ring failed");
	ring->size = ring_words;
	ring->words = calloc(ring_words, sizeof(u64));
	TEST_ASSERT(ring->words, "Allocating the user ring failed");
	b->user_ring = ring;

	kick_run = b->vcpu->run;
	sigemptyset(&sa.sa_mask);
	TEST_ASSERT(!sigaction(SIGRTMIN, &sa, NULL), "sigaction failed");
	sigemptyset(&kick_set);
	sigaddset(&kick_set, SIGRTMIN);
}

/*
 * "user-fast" keeps the kick signal blocked outside KVM_RUN and unblocked
 * inside it (KVM_SET_SIGNAL_MASK), as QEMU can: no handler, no signal frame,
 * the signal interrupts KVM_RUN and is then taken with sigtimedwait().  KVM
 * stores the registers in kvm_run on every exit (sync regs).
 */
static void user_fast_signals(struct bench *b, bool on)
{
	struct {
		struct kvm_signal_mask mask;
		u8 set[8];
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
 * "user": the registers from KVM_GET_REGS and KVM_GET_SREGS.  "user-fast":
 * from kvm_run, where KVM stored them on the way out (KVM_SYNC_X86_REGS and
 * KVM_SYNC_X86_SREGS), no ioctl.  @start: when KVM_RUN returned.
 */
static void user_sample(struct run *r, bool fast, u64 start)
{
	struct bench *b = r->b;
	struct user_ring *ring = b->user_ring;
	u64 *chain = &ring->words[ring->head + 1];
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

	r->t->samples++;
	if (ring->head + 1 + b->max_stack > ring->size) {
		r->t->lost++;
	} else {
		nr = uwalk_chain(&w, regs, chain);
		ring->words[ring->head] = nr;
		ring->head += 1 + nr;
		r->t->translations += w.translations;
	}
	r->t->handle_ns += now_ns() - start;
}

/* ------------------------------------------------------------------------
 * The sampler hooks.
 */
static void user_setup(struct run *r)
{
	struct sigevent sev = {
		.sigev_notify = SIGEV_THREAD_ID,
		.sigev_signo = SIGRTMIN,
	};
	struct bench *b = r->b;

	sev._sigev_un._tid = b->tid;
	TEST_ASSERT(!timer_create(CLOCK_MONOTONIC, &sev, &r->timer), "timer_create failed");
	if (r->ops == &user_fast_sampler)
		user_fast_signals(b, true);
	__atomic_store_n(&sample_pending, 0, __ATOMIC_SEQ_CST);
	b->vcpu->run->immediate_exit = 0;
	b->user_ring->head = 0;
	TEST_ASSERT(ring_need(r->c, r->c->depth + 2) <= b->user_ring->size,
		    "User ring too small for %d Hz", r->c->rate);
}

static void user_set_on(struct run *r, bool on)
{
	long ns = on ? 1000000000l / r->c->rate : 0;
	struct itimerspec its = {
		.it_interval = { .tv_sec = ns / 1000000000l, .tv_nsec = ns % 1000000000l },
		.it_value = { .tv_sec = ns / 1000000000l, .tv_nsec = ns % 1000000000l },
	};

	TEST_ASSERT(!timer_settime(r->timer, 0, &its, NULL), "timer_settime failed");
}

static void user_on_exit(struct run *r, int ret, u64 exit_ns)
{
	/* The handler ran: the kick was ours. */
	r->b->vcpu->run->immediate_exit = 0;
	if (__atomic_exchange_n(&sample_pending, 0, __ATOMIC_SEQ_CST))
		user_sample(r, false, exit_ns);
}

static void user_fast_on_exit(struct run *r, int ret, u64 exit_ns)
{
	/* Take the blocked signal, which also re-arms the timer. */
	if (ret < 0 && sigtimedwait(&kick_set, NULL, &zero_timeout) == SIGRTMIN)
		user_sample(r, true, exit_ns);
}

static void user_teardown(struct run *r)
{
	timer_delete(r->timer);
	if (r->ops == &user_fast_sampler)
		user_fast_signals(r->b, false);
}

static void user_parse(struct run *r, const struct expect *e, struct tally *t)
{
	const struct user_ring *ring = r->b->user_ring;
	u64 pos = 0;

	while (pos < ring->head) {
		u64 nr = ring->words[pos];
		const u64 *chain = &ring->words[pos + 1];

		if (nr) {
			t->guest++;
			tally_chain(t, e, chain[0], &chain[1], nr - 1);
		}
		pos += 1 + nr;
	}
}

const struct sampler_ops user_sampler = {
	.name = "user",
	.chain = true,
	.in_vmm = true,
	.setup = user_setup,
	.set_on = user_set_on,
	.on_exit = user_on_exit,
	.teardown = user_teardown,
	.parse = user_parse,
};

const struct sampler_ops user_fast_sampler = {
	.name = "user-fast",
	.chain = true,
	.in_vmm = true,
	.setup = user_setup,
	.set_on = user_set_on,
	.on_exit = user_fast_on_exit,
	.teardown = user_teardown,
	.parse = user_parse,
};

/* ------------------------------------------------------------------------
 * The pieces of a userspace sample, timed one by one with the guest stopped
 * in its work loop (after a run): what each step costs here.
 */
static void keep_min(double *min, double value)
{
	if (value < *min)
		*min = value;
}

void micro(struct bench *b, const struct config *c, FILE *results_file)
{
	struct kvm_run *run = b->vcpu->run;
	struct kvm_regs regs;
	struct kvm_sregs sregs;
	u64 chain[MAX_DEPTH + 1], t0;
	struct uwalk w = { .b = b, .sregs = &sregs };
	int i, n = 200, nr = 0, batch;
	double us[7] = { 1e9, 1e9, 1e9, 1e9, 1e9, 1e9, 1e9 };

	/* Stop the guest inside its loop: a run that the host interrupts. */
	bench_set_shape(b, c);
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
