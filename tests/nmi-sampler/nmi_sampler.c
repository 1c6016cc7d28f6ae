// SPDX-License-Identifier: GPL-2.0-only
/*
 * nmi_sampler: NMIs on a timer, for taking perf samples in NMI context on a
 * machine without a PMU (QEMU's TCG, Bochs).
 *
 * On real hardware a PMI is an NMI: when it hits a running guest, KVM hands
 * it to the host's handlers from its VM-exit path (KVM_HANDLING_NMI), and
 * the guest call chain is taken there.  This bench has no PMU, and its
 * software events sample from the hrtimer interrupt.  This module gives the
 * test kernel NMIs that arrive the same way: an hrtimer on every CPU sends an
 * NMI to the next online CPU (to itself on a machine with one CPU), and an
 * NMI_LOCAL handler claims the NMIs it sent.  perf's nmi:nmi_handler
 * tracepoint fires in NMI context after each handler, so a process sampling
 * that tracepoint with call chains gets samples taken in NMI context, with
 * the guest's chain when the NMI hit a vCPU in guest mode.
 *
 *   insmod nmi_sampler.ko
 *   echo 500 > /sys/module/nmi_sampler/parameters/period_us   # start
 *   echo 0 > /sys/module/nmi_sampler/parameters/period_us     # stop
 *   cat /sys/module/nmi_sampler/parameters/{sent,handled}
 *
 * Test code for the project's harness, not part of the kernel series.
 */
#include <linux/cpu.h>
#include <linux/hrtimer.h>
#include <linux/irq_work.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <asm/apic.h>
#include <asm/nmi.h>

static DEFINE_PER_CPU(struct hrtimer, nmi_sampler_timer);
/*
 * Each CPU has at most one NMI of ours at a time, from the moment it is sent
 * until the NMI has returned: SAMPLER_SENT, then SAMPLER_CLAIMED while the
 * handler, the nmi:nmi_handler tracepoint and the sample it takes run, then
 * SAMPLER_IDLE in an irq_work, which runs only after the NMI returned.  An
 * NMI that arrives while another is being handled (after an IRET in the
 * handler, e.g. of a page fault, or as emulators deliver them) nests, and
 * the frame-pointer unwinder warns about the host call chain of a sample
 * that crosses both.
 */
enum { SAMPLER_IDLE, SAMPLER_SENT, SAMPLER_CLAIMED };
static DEFINE_PER_CPU(atomic_t, nmi_sampler_state);
static DEFINE_PER_CPU(struct irq_work, nmi_sampler_done);

static DEFINE_MUTEX(nmi_sampler_lock);

static unsigned int period_us;
static atomic_long_t sent = ATOMIC_LONG_INIT(0);
static atomic_long_t handled = ATOMIC_LONG_INIT(0);

static enum hrtimer_restart nmi_sampler_tick(struct hrtimer *timer)
{
	unsigned int period = READ_ONCE(period_us);
	int cpu = cpumask_next(smp_processor_id(), cpu_online_mask);

	if (!period)
		return HRTIMER_NORESTART;

	if (cpu >= nr_cpu_ids)
		cpu = cpumask_first(cpu_online_mask);
	if (atomic_cmpxchg(per_cpu_ptr(&nmi_sampler_state, cpu), SAMPLER_IDLE,
			   SAMPLER_SENT) == SAMPLER_IDLE) {
		if (cpu == smp_processor_id())
			apic->send_IPI_self(NMI_VECTOR);
		else
			apic->send_IPI(cpu, NMI_VECTOR);
		atomic_long_inc(&sent);
	}

	hrtimer_forward_now(timer, ns_to_ktime(period * NSEC_PER_USEC));
	return HRTIMER_RESTART;
}

static int nmi_sampler_nmi(unsigned int type, struct pt_regs *regs)
{
	if (atomic_cmpxchg(this_cpu_ptr(&nmi_sampler_state), SAMPLER_SENT,
			   SAMPLER_CLAIMED) != SAMPLER_SENT)
		return NMI_DONE;
	irq_work_queue(this_cpu_ptr(&nmi_sampler_done));
	atomic_long_inc(&handled);
	return NMI_HANDLED;
}

static void nmi_sampler_idle(struct irq_work *work)
{
	atomic_set(this_cpu_ptr(&nmi_sampler_state), SAMPLER_IDLE);
}

static void nmi_sampler_start_on_cpu(void *unused)
{
	struct hrtimer *timer = this_cpu_ptr(&nmi_sampler_timer);

	hrtimer_start(timer, ns_to_ktime(READ_ONCE(period_us) * NSEC_PER_USEC),
		      HRTIMER_MODE_REL_PINNED_HARD);
}

static void nmi_sampler_stop(void)
{
	int cpu;

	WRITE_ONCE(period_us, 0);
	for_each_possible_cpu(cpu)
		hrtimer_cancel(per_cpu_ptr(&nmi_sampler_timer, cpu));
}

static int period_us_set(const char *value, const struct kernel_param *kp)
{
	unsigned int period;
	int ret;

	ret = kstrtouint(value, 0, &period);
	if (ret)
		return ret;
	if (period && period < 100)
		return -EINVAL;

	mutex_lock(&nmi_sampler_lock);
	cpus_read_lock();
	nmi_sampler_stop();
	if (period) {
		WRITE_ONCE(period_us, period);
		on_each_cpu(nmi_sampler_start_on_cpu, NULL, 1);
	}
	cpus_read_unlock();
	mutex_unlock(&nmi_sampler_lock);
	return 0;
}

static const struct kernel_param_ops period_us_ops = {
	.set = period_us_set,
	.get = param_get_uint,
};
module_param_cb(period_us, &period_us_ops, &period_us, 0644);
MODULE_PARM_DESC(period_us, "Microseconds between the NMIs each CPU sends; 0 (default) stops, at least 100");

static int counter_get(char *buffer, const struct kernel_param *kp)
{
	return sysfs_emit(buffer, "%ld\n", atomic_long_read(kp->arg));
}

static const struct kernel_param_ops counter_ops = {
	.get = counter_get,
};
module_param_cb(sent, &counter_ops, &sent, 0444);
MODULE_PARM_DESC(sent, "NMIs sent");
module_param_cb(handled, &counter_ops, &handled, 0444);
MODULE_PARM_DESC(handled, "NMIs received and claimed");

static int __init nmi_sampler_init(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		hrtimer_setup(per_cpu_ptr(&nmi_sampler_timer, cpu), nmi_sampler_tick,
			      CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
		init_irq_work(per_cpu_ptr(&nmi_sampler_done, cpu), nmi_sampler_idle);
	}

	return register_nmi_handler(NMI_LOCAL, nmi_sampler_nmi, 0, "nmi_sampler");
}

static void __exit nmi_sampler_exit(void)
{
	int cpu;

	mutex_lock(&nmi_sampler_lock);
	nmi_sampler_stop();
	mutex_unlock(&nmi_sampler_lock);
	/* Waits for handlers in flight (synchronize_rcu()). */
	unregister_nmi_handler(NMI_LOCAL, "nmi_sampler");
	for_each_possible_cpu(cpu)
		irq_work_sync(per_cpu_ptr(&nmi_sampler_done, cpu));
}

module_init(nmi_sampler_init);
module_exit(nmi_sampler_exit);
MODULE_DESCRIPTION("NMIs on a timer, for perf samples in NMI context without a PMU");
MODULE_LICENSE("GPL");
