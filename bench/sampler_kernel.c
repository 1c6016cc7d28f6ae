// SPDX-License-Identifier: GPL-2.0-only
/*
 * The in-kernel samplers: a cpu-clock perf event on the vCPU thread, the
 * selftest library's perf_sampler, with PERF_SAMPLE_IP|PERF_SAMPLE_TID
 * ("kernel-ip") or also PERF_SAMPLE_CALLCHAIN ("kernel-chain": the kernel
 * walks the guest's page tables and frame pointers in the sample).  The
 * ring is sized for the whole run and read after it.
 */
#include "bench.h"
#include "perf_sampler.h"
#include "test_util.h"

static void kernel_setup(struct run *r)
{
	const struct config *c = r->c;
	bool chain = r->ops->chain;
	uint64_t bytes = 8 * ring_need(c, 4 + (chain ? c->depth + 3 : 0));
	struct perf_sampler_config config = {
		.period = 1000000000ull / c->rate,
		.data_pages = 16,
		.callchain = chain,
		.disabled = true,
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
	const struct expect *e;
	struct tally *t;
	bool chain;
};

static void kernel_sample(void *arg, const struct perf_sample *s)
{
	struct kernel_parse *p = arg;
	const struct expect *e = p->e;
	const uint64_t *entries;
	uint64_t nr;

	p->t->samples++;
	if (s->cpumode != PERF_RECORD_MISC_GUEST_KERNEL)
		return;
	p->t->guest++;
	if (!p->chain) {
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
	struct kernel_parse p = { .e = e, .t = t, .chain = r->ops->chain };

	/* The ring was sized for the whole run: read it now, then close. */
	perf_sampler_drain(s, kernel_sample, &p);
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
