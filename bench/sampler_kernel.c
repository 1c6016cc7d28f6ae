// SPDX-License-Identifier: GPL-2.0-only
/*
 * The in-kernel samplers: a cpu-clock perf event on the vCPU thread, the
 * selftest library's perf_sampler, with PERF_SAMPLE_IP|PERF_SAMPLE_TID
 * ("kernel-ip"), also PERF_SAMPLE_CALLCHAIN ("kernel-chain": the kernel
 * walks the guest's page tables and frame pointers in the sample), or
 * instead the guest's registers and an 8KiB window of its stack
 * ("kernel-stack", what perf's --call-graph dwarf asks for, for guests
 * without frame pointers), or the chain and beneath it the host's chain of
 * the vCPU thread ("kernel-host", perf_event_attr::vcpu_host_callchain).
 * The ring is sized for the whole run and read after it.
 */
#include <string.h>

#include <asm/perf_regs.h>

#include "bench.h"
#include "perf_sampler.h"
#include "test_util.h"

/* perf's user registers on x86_64: all but the data segments. */
#define STACK_REGS_MASK		(GENMASK_ULL(PERF_REG_X86_SS, PERF_REG_X86_AX) | \
				 GENMASK_ULL(PERF_REG_X86_R15, PERF_REG_X86_R8))

/* Frames of the host part, at most: KVM_RUN's path and the VMM's. */
#define HOST_PART_WORDS		64

/* Words of one sample record. */
static u64 sample_words(const struct run *r)
{
	if (r->ops->stack)
		return 4 + 1 + __builtin_popcountll(STACK_REGS_MASK) + 2 + STACK_WINDOW / 8;
	return 4 + (r->ops->chain ? r->c->depth + 3 : 0) + (r->ops->host ? HOST_PART_WORDS : 0);
}

static void kernel_setup(struct run *r)
{
	const struct config *c = r->c;
	u64 bytes = 8 * ring_need(c, sample_words(r));
	struct perf_sampler_config config = {
		.period = 1000000000ull / c->rate,
		.data_pages = 16,
		.callchain = r->ops->chain && !r->ops->stack,
		.vcpu_host_callchain = r->ops->host,
		.disabled = true,
		.sample_regs_user = r->ops->stack ? STACK_REGS_MASK : 0,
		.sample_stack_user = r->ops->stack ? STACK_WINDOW : 0,
	};

	while (config.data_pages * 4096ull < bytes)
		config.data_pages *= 2;
	r->sampler = perf_sampler_open(0, &config);
}

static void kernel_set_on(struct run *r, bool on)
{
	perf_sampler_enable(r->sampler, on);
}

struct kernel_parse {
	const struct perf_sampler *s;
	const struct expect *e;
	struct tally *t;
	const struct sampler_ops *ops;
};

/*
 * The frame-pointer chain as far as the stack window holds it, which
 * kernel-stack samples must carry whole for the offline unwinders.
 */
static void tally_window(struct kernel_parse *p, const struct perf_sample *sample)
{
	u64 frames[MAX_DEPTH], sp, fp, offset;
	int nr = 0;

	if (!(sample->regs_abi & PERF_SAMPLE_REGS_ABI_GUEST)) {
		tally_chain(p->t, p->e, sample->ip, NULL, ~0ull);
		return;
	}
	sp = perf_sample_reg(p->s, sample, PERF_REG_X86_SP);
	fp = perf_sample_reg(p->s, sample, PERF_REG_X86_BP);
	while (fp && nr < MAX_DEPTH) {
		offset = fp - sp;
		if (fp < sp || offset + 16 > sample->stack_dyn_size)
			break;
		memcpy(&fp, sample->stack + offset, sizeof(fp));
		memcpy(&frames[nr++], sample->stack + offset + 8, sizeof(frames[0]));
	}
	tally_chain(p->t, p->e, sample->ip, frames, fp ? ~0ull : nr);
}

static void kernel_sample(void *arg, const struct perf_sample *s)
{
	struct kernel_parse *p = arg;
	const struct expect *e = p->e;
	const u64 *entries;
	u64 nr;

	p->t->samples++;
	if (s->cpumode != PERF_RECORD_MISC_GUEST_KERNEL)
		return;
	p->t->guest++;
	if (p->ops->stack) {
		tally_window(p, s);
		return;
	}
	if (!p->ops->chain) {
		if (s->ip >= e->loop_start && s->ip < e->loop_end)
			p->t->in_loop++;
		return;
	}
	/* [PERF_CONTEXT_GUEST_KERNEL, ip, return addresses...] */
	if (perf_sample_guest_chain(s, &entries, &nr) == PERF_CONTEXT_GUEST_KERNEL &&
	    nr >= 1 && entries[0] == s->ip)
		tally_chain(p->t, e, s->ip, &entries[1], nr - 1);
	else
		tally_chain(p->t, e, s->ip, NULL, ~0ull);
}

static void kernel_parse(struct run *r, const struct expect *e, struct tally *t)
{
	struct perf_sampler *s = r->sampler;
	struct kernel_parse p = { .s = s, .e = e, .t = t, .ops = r->ops };
	u64 tail = s->page->data_tail;

	/* The ring was sized for the whole run: read it now, then close. */
	perf_sampler_drain(s, kernel_sample, &p);
	t->bytes += s->page->data_tail - tail;
	t->lost += s->lost;
	perf_sampler_close(s);
	r->sampler = NULL;
}

const struct sampler_ops kernel_ip_sampler = {
	.name = "kernel-ip",
	.setup = kernel_setup,
	.set_on = kernel_set_on,
	.parse = kernel_parse,
};

const struct sampler_ops kernel_chain_sampler = {
	.name = "kernel-chain",
	.chain = true,
	.setup = kernel_setup,
	.set_on = kernel_set_on,
	.parse = kernel_parse,
};

const struct sampler_ops kernel_host_sampler = {
	.name = "kernel-host",
	.chain = true,
	.host = true,
	.setup = kernel_setup,
	.set_on = kernel_set_on,
	.parse = kernel_parse,
};

const struct sampler_ops kernel_stack_sampler = {
	.name = "kernel-stack",
	.chain = true,
	.stack = true,
	.max_rate = 1000,
	.setup = kernel_setup,
	.set_on = kernel_set_on,
	.parse = kernel_parse,
};
