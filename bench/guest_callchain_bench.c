// SPDX-License-Identifier: GPL-2.0-only
/*
 * Guest call-chain sampling: in the kernel (kvm.enable_guest_callchains and
 * the VM's opt-in) or in the VMM, side by side, on one guest workload in one
 * process.
 *
 * The guest (guest.c) recurses to a given depth (dense frames, or one frame
 * per page) and then spins incrementing a counter in guest memory: the
 * counter's rate is the work the guest gets done.  Each run samples the
 * vCPU thread with one of these samplers:
 *
 *  none          no sampler: the control
 *  kernel-ip     cpu-clock perf event, PERF_SAMPLE_IP|PERF_SAMPLE_TID
 *  kernel-chain  the same plus PERF_SAMPLE_CALLCHAIN: the kernel walks the
 *                guest's page tables and frame pointers in the sample
 *  kernel-host   kernel-chain, and beneath the guest's chain the host's
 *                chain of the vCPU thread (vcpu_host_callchain): in the
 *                ratios and the smoke run, not the full plan
 *  kernel-stack  the same plus the guest's registers and an 8KiB window
 *                of its stack (PERF_SAMPLE_REGS_USER, PERF_SAMPLE_STACK_USER:
 *                perf's --call-graph dwarf), at 1 kHz and below, where its
 *                ring holds a whole run (sampler_kernel.c)
 *  user          a timer signal kicks the vCPU out of KVM_RUN; the VMM reads
 *                the registers and walks the guest's stack itself
 *  user-fast     the same with the cheapest kick and register access we
 *                know (sampler_user.c)
 *
 * Each run (run.c) alternates phases with the sampler off and on
 * (off-on-on-off..., 25 ms each), so each run carries its own baseline,
 * interleaved with the sampled phases.  The perf ring and the userspace
 * ring are big enough for the whole run and are checked after it; the only
 * other thread sleeps between phase boundaries.  Chains are checked against
 * the return addresses the guest records.  results.csv has one line per
 * run, phases.csv one per phase (with L1 TSC boundaries); bench/report.py
 * makes the tables.  The host side, host_clock, is a program of its own.
 *
 *   guest_callchain_bench [-o results.csv] [-r reps] [-d seconds] [-w seconds]
 *                         [-p phase_seconds] [-T] [-U]
 *                         [--only SAMPLER:DEPTH:RATE[:sparse]]...
 *   guest_callchain_bench --smoke
 *
 * --only, given several times, runs those configurations alone, in turn in
 * each repetition (in reverse order every other one, as the full plan), so
 * that they are compared side by side in one run.
 *
 * -U counts what the kernel's walks did in the runs of kernel-chain,
 * kernel-host and kernel-stack, from KVM's tracepoints (frame records, guest
 * paging-structure entries, page frame lookups and cache hits, copies), into
 * units.csv beside results.csv.  The tracepoints cost time: don't compare
 * the times of such runs with others.  The smoke run counts them too.
 */
#include <getopt.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bench.h"
#include "perf_sampler.h"
#include "test_util.h"

#define MAX_CONFIGS		256
#define MAX_ONLY		8

struct options {
	bool smoke;
	int reps;
	struct timing time;
	struct config only[MAX_ONLY];	/* --only */
	int nr_only;
	const char *results_path;
	bool trace_phases;
	bool walk_units;		/* -U */
};

/* ------------------------------------------------------------------------
 * Output.
 */
static const char *shape_name(const struct config *c)
{
	return c->sparse ? "sparse" : "dense";
}

static void write_header(FILE *f)
{
	fprintf(f,
		"run,rep,shape,depth,sampler,rate_hz,on_s,off_s,work_on,work_off,work_on_per_s,"
		"work_off_per_s,rel_throughput,rel_pooled,samples,samples_per_s,guest_samples,in_loop,"
		"complete,complete_frac,lost,stack_pages,translations_per_sample,"
		"handle_us_per_sample,bytes_per_sample\n");
	fflush(f);
}

static void write_result(FILE *f, const struct result *r)
{
	const struct sampler_ops *ops = samplers[r->c.kind];
	const struct tally *t = &r->t;

	fprintf(f, "%d,%d,%s,%d,%s,%d,%.4f,%.4f,%lu,%lu,%.1f,%.1f,%.5f,%.5f,%lu,%.1f,%lu,%lu,%lu,",
		r->run, r->rep, shape_name(&r->c), r->c.depth, ops->name, r->c.rate,
		r->on_s, r->off_s, r->work_on, r->work_off, r->on_per_s, r->off_per_s, r->rel,
		r->rel_pooled, t->samples, t->samples / r->on_s, t->guest, t->in_loop,
		t->complete);
	if (ops->chain && t->in_loop)
		fprintf(f, "%.4f,", (double)t->complete / t->in_loop);
	else
		fprintf(f, ",");
	fprintf(f, "%lu,%d,", t->lost, r->pages);
	if (ops->in_vmm && t->samples)
		fprintf(f, "%.2f,%.2f,", (double)t->translations / t->samples,
			t->handle_ns / 1e3 / t->samples);
	else
		fprintf(f, ",,");
	if (t->bytes && t->samples)
		fprintf(f, "%.0f\n", (double)t->bytes / t->samples);
	else
		fprintf(f, "\n");
	fflush(f);
}

static void write_units_header(FILE *f)
{
	fprintf(f, "run,rep,shape,depth,sampler,rate_hz,samples,stack_pages,chain_walks,"
		"records,entries,lookups,cached,copies,window_walks,window_bytes,"
		"window_entries,window_lookups,window_cached,window_copies\n");
	fflush(f);
}

static void write_units(FILE *f, const struct result *r)
{
	const struct walk_units *c = &r->t.chain_units, *w = &r->t.window_units;

	fprintf(f, "%d,%d,%s,%d,%s,%d,%lu,%d,%lu,%lu,%lu,%lu,%lu,%lu,%lu,%lu,%lu,%lu,%lu,%lu\n",
		r->run, r->rep, shape_name(&r->c), r->c.depth, samplers[r->c.kind]->name,
		r->c.rate, r->t.samples, r->pages, c->walks, c->records, c->entries, c->lookups,
		c->cached, c->copies, w->walks, w->records, w->entries, w->lookups, w->cached,
		w->copies);
	fflush(f);
}

static void print_result(const struct result *r, int index, int total)
{
	const struct sampler_ops *ops = samplers[r->c.kind];
	const struct tally *t = &r->t;

	printf("[%3d/%d] rep %d %-6s d=%-2d %-12s %5d Hz: %6.1f/%6.1f Mwork/s, on/off %.3f "
	       "(pooled %.3f)", index, total, r->rep, shape_name(&r->c), r->c.depth,
	       ops->name, r->c.rate, r->on_per_s / 1e6, r->off_per_s / 1e6, r->rel,
	       r->rel_pooled);
	if (r->c.kind != S_NONE) {
		printf(", %.0f samples/s", t->samples / r->on_s);
		if (ops->chain && t->in_loop)
			printf(", %.1f%% complete", 100.0 * t->complete / t->in_loop);
		if (t->lost)
			printf(", %lu LOST", t->lost);
		if (ops->in_vmm && t->samples)
			printf(", %.1f us/sample in VMM", t->handle_ns / 1e3 / t->samples);
		if (t->bytes && t->samples)
			printf(", %.0f B/sample", (double)t->bytes / t->samples);
	}
	printf("\n");
	fflush(stdout);
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

static double measure_tsc_mhz(void)
{
	u64 t0 = now_ns(), c0 = bench_rdtsc();

	usleep(100000);
	return (bench_rdtsc() - c0) * 1e3 / (now_ns() - t0);
}

static void describe(FILE *f, const char *prefix, const struct timing *time, double tsc_mhz)
{
	struct utsname u;

	uname(&u);
	fprintf(f, "%skernel=%s %s\n", prefix, u.release, u.version);
	fprintf(f, "%scpus=%ld\n", prefix, sysconf(_SC_NPROCESSORS_ONLN));
	fprintf(f, "%sperf_event_max_stack=%u\n", prefix, perf_event_max_stack());
	fprintf(f, "%sperf_event_max_sample_rate=%ld\n", prefix,
		read_long("/proc/sys/kernel/perf_event_max_sample_rate"));
	fprintf(f, "%sperf_cpu_time_max_percent=%ld\n", prefix,
		read_long("/proc/sys/kernel/perf_cpu_time_max_percent"));
	fprintf(f, "%senable_guest_callchains=%c\n", prefix,
		kvm_get_guest_callchains_param() ? 'Y' : 'N');
	fprintf(f, "%swarmup_s=%.2f\n%smeasured_s=%.2f (off/on phases)\n", prefix,
		time->warmup_s, prefix, time->duration_s);
	fprintf(f, "%sphase_ms=%.0f\n%stsc_mhz=%.1f\n", prefix, time->phase_s * 1e3, prefix,
		tsc_mhz);
}

/* ------------------------------------------------------------------------
 * The plan.
 */
static int add(struct config *list, int n, const struct timing *time, bool sparse, int depth,
	       enum sampler_kind kind, int rate)
{
	TEST_ASSERT(n < MAX_CONFIGS, "Too many configurations");
	list[n] = (struct config){ .sparse = sparse, .depth = depth, .kind = kind, .rate = rate,
				   .time = *time };
	return n + 1;
}

/*
 * A block per stack shape: the control, then the sampled runs.  Even
 * repetitions run the blocks, and the runs inside each block, in reverse
 * order, so that slow drift hits all configurations alike.
 */
static int plan_block(struct config *list, const struct timing *time, bool sparse, int depth,
		      const int *rates, int nr_rates, bool reverse)
{
	struct config sampled[64];
	int i, kind, m = 0, n;

	for (i = 0; i < nr_rates; i++)
		for (kind = S_KERNEL_IP; kind <= S_USER_FAST; kind++)
			if (!samplers[kind]->max_rate || rates[i] <= samplers[kind]->max_rate)
				m = add(sampled, m, time, sparse, depth, kind, rates[i]);

	/* The control: "on" and "off" phases both without sampling. */
	n = add(list, 0, time, sparse, depth, S_NONE, 0);
	for (i = 0; i < m; i++)
		list[n++] = sampled[reverse ? m - 1 - i : i];
	return n;
}

static int plan_full(struct config *list, const struct timing *time, bool reverse)
{
	static const int rates[] = { 250, 1000, 5000, 10000, 20000 };
	static const int sparse_rates[] = { 1000, 5000 };
	struct config blocks[3][64];
	int sizes[3], i, n = 0;

	sizes[0] = plan_block(blocks[0], time, false, 8, rates, ARRAY_SIZE(rates), reverse);
	sizes[1] = plan_block(blocks[1], time, false, 64, rates, ARRAY_SIZE(rates), reverse);
	sizes[2] = plan_block(blocks[2], time, true, 64, sparse_rates, ARRAY_SIZE(sparse_rates),
			      reverse);
	for (i = 0; i < 3; i++) {
		int blk = reverse ? 2 - i : i;

		memcpy(&list[n], blocks[blk], sizes[blk] * sizeof(list[0]));
		n += sizes[blk];
	}
	return n;
}

/* The configurations of repetition @rep (from 1); their number. */
static int plan(const struct options *o, int rep, struct config *list)
{
	int n = 0;

	if (o->nr_only) {
		for (n = 0; n < o->nr_only; n++) {
			const struct config *c = &o->only[rep % 2 ? n : o->nr_only - 1 - n];

			add(list, n, &o->time, c->sparse, c->depth, c->kind, c->rate);
		}
		return n;
	}
	if (!o->smoke)
		return plan_full(list, &o->time, !(rep % 2));
	n = add(list, n, &o->time, false, 8, S_NONE, 0);
	n = add(list, n, &o->time, false, 8, S_KERNEL_CHAIN, 1000);
	n = add(list, n, &o->time, false, 8, S_KERNEL_STACK, 1000);
	n = add(list, n, &o->time, false, 8, S_KERNEL_HOST, 1000);
	n = add(list, n, &o->time, false, 8, S_USER, 1000);
	return add(list, n, &o->time, false, 8, S_USER_FAST, 1000);
}

/*
 * The work the kernel's walks did in a smoke run of @r, which counts it: a
 * walk per chain sample, and for a dense stack at least a frame record per
 * frame, at least a copy per frame record, and at most one table walk (five
 * levels at most) per stack page.
 */
static bool smoke_units(const struct bench *b, const struct result *r)
{
	const struct sampler_ops *ops = samplers[r->c.kind];
	const struct walk_units *c = &r->t.chain_units, *w = &r->t.window_units;
	bool ok = true;

	if (!counts_walk_units(b, &r->c))
		return true;
	/* kernel-stack's chains are the benchmark's own, from the window. */
	if (ops->chain && !ops->stack && (c->walks < r->t.guest * 9 / 10 ||
			   c->records * 10 < c->walks * r->c.depth * 9 || c->copies < c->records ||
			   c->entries > c->walks * 5 * r->pages)) {
		printf("smoke: FAIL %s: %lu chain walks for %lu guest samples, %lu frame "
		       "records, %lu entries, %lu copies\n", ops->name, c->walks, r->t.guest,
		       c->records, c->entries, c->copies);
		ok = false;
	}
	if (ops->stack && (!w->walks || !w->records)) {
		printf("smoke: FAIL %s: %lu stack window walks, %lu bytes\n", ops->name,
		       w->walks, w->records);
		ok = false;
	}
	return ok;
}

/* The smoke run's verdict: work done, samples taken, complete chains. */
static bool smoke_verdict(const struct bench *b, const struct result *results, int n)
{
	bool ok = true;
	int i;

	for (i = 0; i < n; i++) {
		const struct result *r = &results[i];
		const struct sampler_ops *ops = samplers[r->c.kind];
		const struct tally *t = &r->t;
		double frac = t->in_loop ? (double)t->complete / t->in_loop : 0;

		if (!r->work_on || !r->work_off) {
			printf("smoke: FAIL %s: no work done\n", ops->name);
			ok = false;
		}
		if (r->c.kind != S_NONE && !t->samples) {
			printf("smoke: FAIL %s: no samples\n", ops->name);
			ok = false;
		}
		if (ops->chain && frac <= 0.9) {
			printf("smoke: FAIL %s: %.3f of the samples have the complete chain\n",
			       ops->name, frac);
			ok = false;
		}
		ok &= smoke_units(b, r);
	}
	printf("smoke: %s\n", ok ? "PASS" : "FAIL");
	return ok;
}

/* ------------------------------------------------------------------------
 * Set-up.
 */
static void help(const char *name)
{
	printf("usage: %s [--smoke] [-o results.csv] [-r reps] [-d seconds] [-w warmup_s]\n"
	       "          [-p phase_s] [-T] [--only SAMPLER:DEPTH:RATE[:sparse]]...\n", name);
}

/* SAMPLER:DEPTH:RATE[:sparse], e.g. kernel-chain:64:5000 */
static bool parse_only(const char *arg, struct config *only)
{
	char name[32] = "", shape[16] = "dense";
	int depth = 0, rate = 0, kind;

	if (sscanf(arg, "%31[^:]:%d:%d:%15s", name, &depth, &rate, shape) < 3 ||
	    depth < 3 || depth > 64)
		return false;
	for (kind = 0; kind < NR_SAMPLERS; kind++)
		if (!strcmp(name, samplers[kind]->name))
			break;
	if (kind == NR_SAMPLERS)
		return false;
	*only = (struct config){ .sparse = !strcmp(shape, "sparse"), .depth = depth,
				 .kind = kind, .rate = rate };
	return true;
}

static void parse_options(int argc, char *argv[], struct options *o)
{
	static const struct option options[] = {
		{ "smoke", no_argument, NULL, 's' },
		{ "only", required_argument, NULL, 'O' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int opt;

	*o = (struct options){ .reps = 5, .time = { 0.2, 2.2, 0.025 } };
	while ((opt = getopt_long(argc, argv, "o:r:d:w:p:TUh", options, NULL)) != -1) {
		switch (opt) {
		case 's':
			o->smoke = true;
			break;
		case 'O':
			if (o->nr_only == MAX_ONLY || !parse_only(optarg, &o->only[o->nr_only++])) {
				help(argv[0]);
				exit(1);
			}
			break;
		case 'o':
			o->results_path = optarg;
			break;
		case 'r':
			o->reps = atoi(optarg);
			break;
		case 'd':
			o->time.duration_s = atof(optarg);
			break;
		case 'w':
			o->time.warmup_s = atof(optarg);
			break;
		case 'p':
			o->time.phase_s = atof(optarg);
			break;
		case 'T':
			o->trace_phases = true;
			break;
		case 'U':
			o->walk_units = true;
			break;
		default:
			help(argv[0]);
			exit(opt == 'h' ? 0 : 1);
		}
	}
	if (o->smoke) {
		o->walk_units = true;
		o->reps = 1;
		o->time.duration_s = 1.0;
		o->time.warmup_s = 0.2;
	}
}

/* The directory of @path, for the files written beside results.csv. */
static char *dir_of(const char *path)
{
	char *dir = strdup(path), *slash;

	TEST_ASSERT(dir, "strdup failed");
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = 0;
		return dir;
	}
	free(dir);
	return strdup(".");
}

/*
 * Open results.csv (returned, its path in *@results_path), phases.csv and
 * the host clock's sync file beside it.
 */
static FILE *open_outputs(struct bench *b, const struct options *o, char **results_path)
{
	const char *l1_results = getenv("L1_RESULTS");
	char *path, *dir;
	FILE *results;

	if (o->results_path)
		path = strdup(o->results_path);
	else
		TEST_ASSERT(asprintf(&path, "%s/%s", l1_results ?: ".",
				     o->smoke ? "smoke.csv" : "results.csv") > 0, "asprintf failed");
	results = fopen(path, "w");
	TEST_ASSERT(results, "Can't write %s", path);
	*results_path = path;

	dir = dir_of(path);
	TEST_ASSERT(asprintf(&path, "%s/%s", dir, o->smoke ? "smoke-phases.csv" : "phases.csv") > 0,
		    "asprintf failed");
	b->phases_file = fopen(path, "w");
	TEST_ASSERT(b->phases_file, "Can't write %s", path);
	fprintf(b->phases_file, "run,phase,on,l1_tsc_start,l1_tsc_end,work\n");
	free(path);
	TEST_ASSERT(asprintf(&path, "%s/sync", dir) > 0, "asprintf failed");
	b->sync_path = path;
	if (o->walk_units) {
		TEST_ASSERT(asprintf(&path, "%s/%s", dir,
				     o->smoke ? "smoke-units.csv" : "units.csv") > 0,
			    "asprintf failed");
		b->units_file = fopen(path, "w");
		TEST_ASSERT(b->units_file, "Can't write %s", path);
		write_units_header(b->units_file);
		free(path);
	}
	free(dir);
	return results;
}

/*
 * All threads on one CPU, the last: the timers that drive both kinds of
 * sampler then fire where the vCPU thread runs, run after run.
 */
static void pin_to_last_cpu(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(sysconf(_SC_NPROCESSORS_ONLN) - 1, &set);
	TEST_ASSERT(!sched_setaffinity(0, sizeof(set), &set), "sched_setaffinity failed");
}

/* Fault the guest's code, data and whole stack in once, with short runs. */
static void warm_up(struct bench *b)
{
	struct config warm = { .sparse = true, .depth = 64, .kind = S_NONE,
			       .time = { .warmup_s = 0.05, .duration_s = 0.1, .phase_s = 0.025 } };
	struct result scratch;

	run_config(b, &warm, 0, &scratch);
	warm.sparse = false;
	run_config(b, &warm, 0, &scratch);
}

/* The pieces of a userspace sample, timed one by one: see micro(). */
static void micro_all(struct bench *b, const struct options *o, FILE *results)
{
	const struct config shapes[] = {
		{ .depth = 8 }, { .depth = 64 }, { .sparse = true, .depth = 64 },
	};
	int i;

	if (o->nr_only)
		return;
	for (i = 0; i < (o->smoke ? 1 : ARRAY_SIZE(shapes)); i++)
		micro(b, &shapes[i], results);
}

int main(int argc, char *argv[])
{
	static struct config list[MAX_CONFIGS];
	static struct result results[MAX_CONFIGS];
	struct config fastest = { .rate = 20000 };
	int rep, i, n = 0, index = 0, total;
	struct bench b = {};
	struct options o;
	char *results_path;
	FILE *results_file;
	u64 start;
	double tsc_mhz;
	bool ok = true;

	parse_options(argc, argv, &o);
	kvm_guest_callchains_require();
	kvm_set_guest_callchains_param(true);
	b.max_stack = perf_event_max_stack();
	TEST_ASSERT(b.max_stack >= 66 && b.max_stack <= MAX_DEPTH,
		    "perf_event_max_stack %u: need 66..%d for 64-frame chains", b.max_stack,
		    MAX_DEPTH);
	b.trace_phases = o.trace_phases;
	pin_to_last_cpu();
	results_file = open_outputs(&b, &o, &results_path);
	tsc_mhz = measure_tsc_mhz();
	describe(results_file, "# ", &o.time, tsc_mhz);
	describe(stdout, "bench: ", &o.time, tsc_mhz);
	write_header(results_file);

	bench_create(&b);
	fastest.time = o.time;
	user_samplers_init(&b, ring_need(&fastest, 64 + 2));
	warm_up(&b);
	micro_all(&b, &o, results_file);

	total = o.reps * plan(&o, 1, list);
	printf("bench: %d runs of %.2f s (+%.2f s warm-up)\n", total, o.time.duration_s,
	       o.time.warmup_s);
	start = now_ns();
	for (rep = 1; rep <= o.reps; rep++) {
		n = plan(&o, rep, list);
		for (i = 0; i < n; i++) {
			run_config(&b, &list[i], rep, &results[i]);
			write_result(results_file, &results[i]);
			if (counts_walk_units(&b, &list[i]))
				write_units(b.units_file, &results[i]);
			print_result(&results[i], ++index, total);
		}
	}
	printf("bench: %d runs in %.1f s, results in %s\n", total, (now_ns() - start) / 1e9,
	       results_path);

	if (o.smoke)
		ok = smoke_verdict(&b, results, n);
	fclose(results_file);
	if (b.units_file)
		fclose(b.units_file);
	kvm_vm_free(b.vm);
	return ok ? 0 : 1;
}
