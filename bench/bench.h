/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Guest call-chain sampling in the kernel and in the VMM, side by side: the
 * pieces of guest_callchain_bench (see guest_callchain_bench.c for what it
 * measures and how).
 *
 *   guest.c           the guest workload and the VM
 *   run.c             one run: the vCPU loop, the phases, the result
 *   sampler_kernel.c  kernel-ip, kernel-chain: perf events (the selftest
 *                     library's perf_sampler)
 *   sampler_user.c    user, user-fast: the walk in the VMM, and the
 *                     micro-benchmark of its pieces
 */
#ifndef GUEST_CALLCHAIN_BENCH_H
#define GUEST_CALLCHAIN_BENCH_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "guest_callchain.h"
#include "kvm_util.h"

#define MAX_DEPTH		128
#define MAX_PHASES		4096
#define BENCH_PAGE_SIZE		4096ull
#define BENCH_PAGE_MASK		(~(BENCH_PAGE_SIZE - 1))

enum sampler_kind {
	S_NONE, S_KERNEL_IP, S_KERNEL_CHAIN, S_KERNEL_STACK, S_USER, S_USER_FAST,
	S_KERNEL_HOST,		/* not in the full plan: the ratios and the smoke run */
	NR_SAMPLERS
};

/* The stack window of kernel-stack: perf's --call-graph dwarf default. */
#define STACK_WINDOW		8192

/* How long a run lasts: the warm-up, then off/on phases for duration_s. */
struct timing {
	double warmup_s;
	double duration_s;
	double phase_s;
};

/* One configuration: a stack shape, a sampler and its rate. */
struct config {
	bool sparse;			/* one frame per page */
	int depth;			/* frames below guest_callchain_entry, 3..64 */
	enum sampler_kind kind;
	int rate;			/* Hz */
	struct timing time;
};

/* The chain every sample in the guest's work loop must carry. */
struct expect {
	int depth;
	u64 loop_start, loop_end;
	u64 ret[MAX_DEPTH];
	int pages;			/* distinct stack pages of the frames */
};

/*
 * With -U: what the kernel's walks of the guest's stack did, summed over a
 * run, from KVM's tracepoints kvm_guest_callchain_walk (one per chain) and
 * kvm_guest_stack_window_walk (one per piece of a stack window, and one,
 * with no bytes, per look at the link to the stack an interrupt stack left).
 */
struct walk_units {
	u64 walks;			/* tracepoint events */
	u64 records;		/* frame records read; bytes of a window */
	u64 entries;		/* guest paging-structure entries read */
	u64 lookups;		/* page frames looked up in the VMM's page tables */
	u64 cached;			/* page frames found in the vCPU's cache */
	u64 copies;			/* nofault copies from guest memory */
};

struct tally {
	u64 samples;		/* delivered */
	u64 guest;			/* taken while in the guest */
	u64 in_loop;		/* ... at the work loop: chain known */
	u64 complete;		/* ... with exactly the expected chain */
	u64 lost;
	u64 translations;		/* user: page table walks */
	u64 handle_ns;		/* user: time from -EINTR to re-entry */
	u64 bytes;			/* kernel: of the sample records */
	struct walk_units chain_units, window_units;	/* -U */
};

struct result {
	struct config c;
	int run;			/* index in results.csv */
	int rep;
	double on_s, off_s;		/* phases with the sampler on, off */
	u64 work_on, work_off;
	double on_per_s, off_per_s;	/* work per second */
	double rel;			/* on / off: upper quartiles of phases */
	double rel_pooled;		/* on / off: all phases together */
	struct tally t;
	int pages;
};

struct memslot_map {
	u64 gpa, size;
	u8 *hva;
};

/* The VM, and what the host side of the benchmark keeps across runs. */
struct bench {
	struct kvm_vm *vm;
	struct kvm_vcpu *vcpu;
	pid_t tid;			/* the vCPU thread: this one */
	u64 *counter, *stop, *depth, *sparse;	/* guest variables */
	struct memslot_map slots[16];	/* what a VMM knows anyway */
	int nr_slots;
	u32 max_stack;		/* kernel.perf_event_max_stack */
	FILE *phases_file;		/* per phase: TSC boundaries and work */
	const char *sync_path;		/* for the host clock, or NULL */
	bool trace_phases;
	FILE *units_file;		/* -U: per run, the walks' work */
	int next_run;			/* index of the next run in results.csv */
	struct user_ring *user_ring;	/* the userspace samplers' chains */
};

struct run;

/*
 * A sampler: what run_config() calls around one run.  Every hook may be
 * NULL.  setup() and teardown() run on the vCPU thread before and after
 * the KVM_RUN loop; set_on() on the monitor thread at phase boundaries;
 * on_exit() after every return from KVM_RUN, with its status; parse()
 * after the run, counting samples against the expected chain.
 */
struct sampler_ops {
	const char *name;
	bool chain;			/* its samples carry call chains */
	bool in_vmm;			/* it samples in the VMM, timed per sample */
	bool stack;			/* registers and stack window, not a chain */
	bool host;			/* the vCPU thread's host chain beneath */
	int max_rate;			/* Hz, if its ring can't hold more */
	void (*setup)(struct run *r);
	void (*set_on)(struct run *r, bool on);
	void (*on_exit)(struct run *r, int ret, u64 exit_ns);
	void (*teardown)(struct run *r);
	void (*parse)(struct run *r, const struct expect *e, struct tally *t);
};

/* One run of one configuration. */
struct run {
	struct bench *b;
	const struct config *c;
	const struct sampler_ops *ops;
	struct tally *t;
	void *sampler;			/* the sampler's own state */
	timer_t timer;			/* the userspace samplers' kick */
};

extern const struct sampler_ops *const samplers[NR_SAMPLERS];
extern const struct sampler_ops none_sampler, kernel_ip_sampler, kernel_chain_sampler;
extern const struct sampler_ops kernel_stack_sampler, kernel_host_sampler;
extern const struct sampler_ops user_sampler, user_fast_sampler;

/* guest.c */
void bench_create(struct bench *b);
void bench_set_shape(struct bench *b, const struct config *c);
void read_expect(struct bench *b, struct expect *e, int depth);

/* run.c */
u64 bench_rdtsc(void);
/* now_ns(): the selftest library's (x86/guest_callchain.h), CLOCK_MONOTONIC */
u64 ring_need(const struct config *c, u64 words_per_sample);
bool counts_walk_units(const struct bench *b, const struct config *c);
void tally_chain(struct tally *t, const struct expect *e, u64 ip,
		 const u64 *frames, u64 nr_frames);
void run_config(struct bench *b, const struct config *c, int rep, struct result *r);

/* sampler_user.c */
void user_samplers_init(struct bench *b, u64 ring_words);
void micro(struct bench *b, const struct config *c, FILE *results_file);

#endif /* GUEST_CALLCHAIN_BENCH_H */
