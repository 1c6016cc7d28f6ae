// SPDX-License-Identifier: GPL-2.0-only
/*
 * One run of one configuration: the vCPU loop on this thread, a monitor
 * thread that paces the off/on phases, then the sampler's samples checked
 * against the chain the guest recorded.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "processor.h"
#include "ucall_common.h"

const struct sampler_ops none_sampler = { .name = "none" };

const struct sampler_ops *const samplers[NR_SAMPLERS] = {
	[S_NONE] = &none_sampler,
	[S_KERNEL_IP] = &kernel_ip_sampler,
	[S_KERNEL_CHAIN] = &kernel_chain_sampler,
	[S_KERNEL_STACK] = &kernel_stack_sampler,
	[S_USER] = &user_sampler,
	[S_USER_FAST] = &user_fast_sampler,
	[S_KERNEL_HOST] = &kernel_host_sampler,
};

/*
 * Under QEMU TCG, L1's TSC is the host's TSC plus a constant, which lets
 * the host clock (host_clock.c) tell how much CPU time QEMU really had
 * during each phase: see report.py.
 */
u64 bench_rdtsc(void)
{
	u32 lo, hi;

	asm volatile("rdtsc" : "=a" (lo), "=d" (hi));
	return ((u64)hi << 32) | lo;
}

/* Ring words for one run of @c at @words_per_sample, with a margin. */
u64 ring_need(const struct config *c, u64 words_per_sample)
{
	return (u64)(c->rate * (c->time.warmup_s + c->time.duration_s + 1.0) * 1.25 +
			  1000) * words_per_sample;
}

void tally_chain(struct tally *t, const struct expect *e, u64 ip,
		 const u64 *frames, u64 nr_frames)
{
	int i;

	if (ip < e->loop_start || ip >= e->loop_end)
		return;
	t->in_loop++;
	if (nr_frames != (u64)e->depth)
		return;
	for (i = 0; i < e->depth; i++) {
		if (frames[i] != e->ret[i])
			return;
	}
	t->complete++;
}

/*
 * The monitor thread paces a run: after the warm-up it alternates phases
 * with the sampler off and on (off-on-on-off-off-on-...), reads the work
 * counter at every phase boundary, and finally stops the guest.  Each run
 * thus carries its own baseline, measured in phases interleaved with the
 * sampled ones, so that slow drift of the host (TCG, other load) cancels.
 */
struct monitor {
	struct run *r;
	u64 work[2];		/* [off, on] */
	u64 ns[2];
	int phases;
	double rate[MAX_PHASES];	/* work per second in each phase */
	u64 phase_work[MAX_PHASES];
	u64 tsc[MAX_PHASES + 1];	/* phase boundaries */
};

static bool phase_on(int p)
{
	return p % 4 == 1 || p % 4 == 2;
}

static void sleep_until(u64 ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000ull, .tv_nsec = ns % 1000000000ull };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void set_on(struct run *r, bool on)
{
	if (r->ops->set_on)
		r->ops->set_on(r, on);
}

static void *monitor_thread(void *arg)
{
	struct monitor *m = arg;
	struct bench *b = m->r->b;
	const struct timing *time = &m->r->c->time;
	u64 t = now_ns(), count, prev_t, prev_count;
	bool state = false;
	int p;

	sleep_until(t + time->warmup_s * 1e9);
	prev_t = now_ns();
	m->tsc[0] = bench_rdtsc();
	prev_count = __atomic_load_n(b->counter, __ATOMIC_RELAXED);
	for (p = 0; p < m->phases; p++) {
		bool on = phase_on(p);

		if (on != state)
			set_on(m->r, on);
		state = on;
		sleep_until(prev_t + time->duration_s * 1e9 / m->phases);
		t = now_ns();
		m->tsc[p + 1] = bench_rdtsc();
		count = __atomic_load_n(b->counter, __ATOMIC_RELAXED);
		m->phase_work[p] = count - prev_count;
		m->work[on] += count - prev_count;
		m->ns[on] += t - prev_t;
		m->rate[p] = (count - prev_count) * 1e9 / (t - prev_t);
		if (b->trace_phases)
			printf("phase %d %s %.1f Mwork/s\n", p, on ? "on" : "off",
			       (count - prev_count) * 1e3 / (t - prev_t));
		prev_t = t;
		prev_count = count;
	}
	if (state)
		set_on(m->r, false);
	__atomic_store_n(b->stop, 1, __ATOMIC_RELAXED);
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
	double rates[MAX_PHASES];
	int p, n = 0;

	for (p = 0; p < m->phases; p++) {
		if (phase_on(p) == on)
			rates[n++] = m->rate[p];
	}
	qsort(rates, n, sizeof(rates[0]), compare_double);
	return rates[(3 * n) / 4 < n ? (3 * n) / 4 : n - 1];
}

/*
 * Tell the host clock where L1's TSC is: it notes its own TSC when the file
 * is closed, later than ours by the 9p round trip at least.
 */
static void sync_mark(const char *path)
{
	char text[32];
	int fd, len;

	if (!path)
		return;
	len = snprintf(text, sizeof(text), "%lu\n", bench_rdtsc());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return;
	if (write(fd, text, len) != len)
		fprintf(stderr, "Writing %s failed\n", path);
	close(fd);
}

/*
 * Run the vCPU until the guest ends its pass (GUEST_SYNC), giving the
 * sampler every return from KVM_RUN: -EINTR is a kick.
 */
static void run_vcpu(struct run *r)
{
	struct kvm_vcpu *vcpu = r->b->vcpu;
	bool timed = r->ops->on_exit != NULL;
	struct ucall uc;

	for (;;) {
		int ret = __vcpu_run(vcpu);
		u64 exit_ns = timed ? now_ns() : 0;

		if (ret < 0) {
			TEST_ASSERT(errno == EINTR, "KVM_RUN failed: %s", strerror(errno));
		} else {
			TEST_ASSERT_KVM_EXIT_REASON(vcpu, KVM_EXIT_IO);
			switch (get_ucall(vcpu, &uc)) {
			case UCALL_SYNC:
				return;
			case UCALL_ABORT:
				REPORT_GUEST_ASSERT(uc);
				break;
			default:
				TEST_FAIL("Unexpected ucall %lu", uc.cmd);
			}
		}
		if (r->ops->on_exit)
			r->ops->on_exit(r, ret, exit_ns);
	}
}

static void write_phases(struct bench *b, const struct monitor *m, int run)
{
	int p;

	if (!b->phases_file)
		return;
	for (p = 0; p < m->phases; p++)
		fprintf(b->phases_file, "%d,%d,%d,%lu,%lu,%lu\n", run, p, phase_on(p),
			m->tsc[p], m->tsc[p + 1], m->phase_work[p]);
	fflush(b->phases_file);
}

/*
 * -U: the work of the kernel's walks, from KVM's tracepoints, which tracefs
 * collects during the run.  The tracepoints cost time of their own: the
 * runs that count are not the runs that time.
 */
#define TRACEFS			"/sys/kernel/tracing"

static const char *const walk_events[] = {
	"kvm_guest_callchain_walk", "kvm_guest_stack_window_walk",
};

bool counts_walk_units(const struct bench *b, const struct config *c)
{
	const struct sampler_ops *ops = samplers[c->kind];

	return b->units_file && !ops->in_vmm && (ops->chain || ops->stack);
}

static void write_tracefs(const char *file, const char *value)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), TRACEFS "/%s", file);
	fd = open(path, O_WRONLY | O_TRUNC);
	TEST_ASSERT(fd >= 0, "Opening %s failed (tracefs, KVM's tracepoints)", path);
	TEST_ASSERT(write(fd, value, strlen(value)) == (ssize_t)strlen(value),
		    "Writing '%s' to %s failed", value, path);
	close(fd);
}

static void trace_walks(bool on)
{
	char file[128];
	size_t i;

	if (on)
		write_tracefs("trace", "");
	for (i = 0; i < ARRAY_SIZE(walk_events); i++) {
		snprintf(file, sizeof(file), "events/kvm/%s/enable", walk_events[i]);
		write_tracefs(file, on ? "1" : "0");
	}
}

/* Add one event's "vcpu V NAME R entries E lookups L cached C copies P". */
static void add_walk(struct walk_units *u, const char *fields)
{
	unsigned int vcpu, records, entries, lookups, cached, copies;
	char name[16];

	if (sscanf(fields, "vcpu %u %15s %u entries %u lookups %u cached %u copies %u",
		   &vcpu, name, &records, &entries, &lookups, &cached, &copies) != 7)
		return;
	u->walks++;
	u->records += records;
	u->entries += entries;
	u->lookups += lookups;
	u->cached += cached;
	u->copies += copies;
}

static void read_walks(struct tally *t)
{
	FILE *f = fopen(TRACEFS "/trace", "r");
	char line[512], *p;

	TEST_ASSERT(f, "Opening " TRACEFS "/trace failed");
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, "kvm_guest_callchain_walk: ");
		if (p) {
			add_walk(&t->chain_units, p + strlen("kvm_guest_callchain_walk: "));
			continue;
		}
		p = strstr(line, "kvm_guest_stack_window_walk: ");
		if (p)
			add_walk(&t->window_units, p + strlen("kvm_guest_stack_window_walk: "));
	}
	fclose(f);
}

void run_config(struct bench *b, const struct config *c, int rep, struct result *res)
{
	struct run r = { .b = b, .c = c, .ops = samplers[c->kind], .t = &res->t };
	struct monitor *m = calloc(1, sizeof(*m));
	pthread_t monitor;
	struct expect e;

	TEST_ASSERT(m, "Allocating the monitor failed");
	m->r = &r;
	memset(res, 0, sizeof(*res));
	res->c = *c;
	res->rep = rep;
	res->run = b->next_run++;
	sync_mark(b->sync_path);

	bench_set_shape(b, c);
	if (counts_walk_units(b, c))
		trace_walks(true);
	if (r.ops->setup)
		r.ops->setup(&r);

	/* Phases of at least phase_s, in whole off-on-on-off groups. */
	m->phases = 4 * (int)(c->time.duration_s / (4 * c->time.phase_s));
	if (m->phases < 4)
		m->phases = 4;
	TEST_ASSERT(m->phases <= MAX_PHASES, "Too many phases");
	pthread_create(&monitor, NULL, monitor_thread, m);
	run_vcpu(&r);
	pthread_join(monitor, NULL);
	if (r.ops->teardown)
		r.ops->teardown(&r);
	b->vcpu->run->immediate_exit = 0;
	if (counts_walk_units(b, c)) {
		trace_walks(false);
		read_walks(&res->t);
	}

	/* The leaf recorded the frames before it started counting. */
	read_expect(b, &e, c->depth);
	if (r.ops->parse)
		r.ops->parse(&r, &e, &res->t);
	write_phases(b, m, res->run);

	res->pages = e.pages;
	res->on_s = m->ns[1] / 1e9;
	res->off_s = m->ns[0] / 1e9;
	res->work_on = m->work[1];
	res->work_off = m->work[0];
	res->on_per_s = m->work[1] / res->on_s;
	res->off_per_s = m->work[0] / res->off_s;
	res->rel_pooled = res->on_per_s / res->off_per_s;
	res->rel = upper_quartile(m, true) / upper_quartile(m, false);
	free(m);
}
