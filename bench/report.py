#!/usr/bin/env python3
"""Turn guest_callchain_bench's results.csv into results.md and overhead.png.

    report.py RESULTS.CSV [OUTDIR]

Every run of the benchmark alternates 25 ms phases with its sampler off and
on; "rel" is the guest's work rate with the sampler on divided by its rate
with it off, in the same run.  With the host clock (bench/run.sh runs
bench/host_clock.c beside QEMU), rates are per CPU time that QEMU's
vCPU thread really got, and rel is the median over neighbouring off/on phase
pairs; without it, rel is computed in L1 (upper quartiles of the phase rates
over L1 wall time).  Over the repetitions we report the median and the range
(min-max).  The cost of one sample, in microseconds of vCPU time, is the
extra time the "on" phases took for their work, (1 - rel) * on time, divided
by their samples; the cost of the chain itself is kernel-chain minus
kernel-ip of the same repetition.
"""
import bisect
import csv
import math
import os
import statistics
import sys
from collections import defaultdict

SAMPLERS = ["kernel-ip", "kernel-chain", "kernel-host", "kernel-stack", "user", "user-fast"]
LABEL = {
    "kernel-ip": "in-kernel, IP only",
    "kernel-chain": "in-kernel, guest chain",
    "kernel-host": "in-kernel, guest chain + the vCPU thread's host chain",
    "kernel-stack": "in-kernel, guest registers + 8 KiB stack",
    "user": "userspace (signal handler, GET_REGS+GET_SREGS)",
    "user-fast": "userspace (sigmask+sigtimedwait, sync regs)",
}
COLOR = {"kernel-ip": "tab:gray", "kernel-chain": "tab:blue", "kernel-host": "tab:purple",
         "kernel-stack": "tab:green",
         "user": "tab:red", "user-fast": "tab:orange"}
STACKS = [("dense", 8), ("dense", 64), ("sparse", 64)]
STYLE = {("dense", 8): "-", ("dense", 64): "--", ("sparse", 64): ":"}
MARK = {("dense", 8): "o", ("dense", 64): "s", ("sparse", 64): "^"}


def stack_name(shape, depth):
    return f"{depth} frames" + (", 1 per page" if shape == "sparse" else "")


def load(path):
    meta, micro, rows = {}, [], []
    with open(path) as f:
        lines = []
        for line in f:
            if line.startswith("# micro: "):
                micro.append(line[len("# micro: "):].strip())
            elif line.startswith("# "):
                key, _, value = line[2:].strip().partition("=")
                meta[key] = value
            else:
                lines.append(line)
    for r in csv.DictReader(lines):
        for k in ("run", "rep", "depth", "rate_hz", "samples", "in_loop", "complete", "lost",
                  "stack_pages"):
            r[k] = int(r[k])
        for k in ("rel_throughput", "samples_per_s", "work_off_per_s", "work_on_per_s"):
            r[k] = float(r[k])
        r["complete_frac"] = float(r["complete_frac"]) if r["complete_frac"] else None
        r["handle_us_per_sample"] = (float(r["handle_us_per_sample"])
                                     if r["handle_us_per_sample"] else None)
        r["on_cpu_s"] = float(r["on_s"])
        rows.append(r)
    return meta, micro, rows


def add_costs(rows):
    """Microseconds of vCPU time per delivered sample: the time the work of
    the "on" phases took beyond what it takes at the "off" rate."""
    for r in rows:
        r["cost_us"] = ((1 - r["rel_throughput"]) * r["on_cpu_s"] / r["samples"] * 1e6
                        if r["samples"] else None)


def host_cpu_rel(outdir, phases_name, rows, tsc_mhz):
    """Recompute on/off per run against QEMU's vCPU thread's CPU time.

    With host clock data (hostclock.csv, sync.csv from the host, phases.csv
    from L1), each phase's work is divided by the CPU time the host really
    gave QEMU's vCPU thread in that phase, instead of L1's wall time: the
    host deschedules QEMU at random (other load), which stops L1's guest and
    its clock-driven samplers but not L1's clock.  L1's TSC is the host's
    plus a constant: the smallest host-minus-L1 TSC over the sync marks.
    Returns a description, or None without the data.
    """
    paths = [os.path.join(outdir, n) for n in ("hostclock.csv", "sync.csv", phases_name)]
    if not all(os.path.exists(p) and os.path.getsize(p) > 0 for p in paths):
        return None
    with open(paths[0]) as f:
        clock = [(int(a), int(b)) for a, b in (l.split(",") for l in list(f)[1:])]
    with open(paths[1]) as f:
        sync = [(int(a), int(b)) for a, b in (l.split(",") for l in list(f)[1:])]
    if len(clock) < 2 or not sync:
        return None
    tsc = [c[0] for c in clock]
    ns = [c[1] for c in clock]
    offset = min(h - l for l, h in sync)
    half = len(sync) // 2
    drift = (min(h - l for l, h in sync[half:]) - min(h - l for l, h in sync[:half])
             if half else 0)

    def cpu_at(l1_tsc):
        t = l1_tsc + offset
        i = bisect.bisect_left(tsc, t)
        if i <= 0 or i >= len(tsc):
            return None
        return ns[i - 1] + (ns[i] - ns[i - 1]) * (t - tsc[i - 1]) / (tsc[i] - tsc[i - 1])

    # Per run, per phase: [on, work, CPU ns, L1 TSC ticks].
    phases = defaultdict(dict)
    with open(paths[2]) as f:
        for p in csv.DictReader(f):
            a, b = cpu_at(int(p["l1_tsc_start"])), cpu_at(int(p["l1_tsc_end"]))
            if a is None or b is None:
                continue
            phases[int(p["run"])][int(p["phase"])] = (
                int(p["on"]), int(p["work"]), b - a,
                int(p["l1_tsc_end"]) - int(p["l1_tsc_start"]))
    shares = []
    for r in rows:
        ph = phases.get(r["run"])
        if not ph:
            continue
        # Neighbouring phases 2k and 2k+1 are one off and one on: the median
        # of their ratios, ignoring phases in which QEMU hardly ran (the
        # runtime the host reports is only exact to a tick).
        ratios, on_cpu, cpu, ticks = [], 0.0, 0.0, 0
        for k in range(0, max(ph) + 1, 2):
            pair = [ph.get(k), ph.get(k + 1)]
            if None in pair:
                continue
            for on, work, c, t in pair:
                cpu += c
                ticks += t
                on_cpu += c if on else 0
            if any(c < 0.5 * t * 1e3 / tsc_mhz or c <= 0 or not w for _, w, c, t in pair):
                continue
            rate = {on: w / c for on, w, c, _ in pair}
            ratios.append(rate[1] / rate[0])
        if not ratios:
            continue
        r["rel_wall"] = r["rel_throughput"]
        r["rel_throughput"] = statistics.median(ratios)
        r["on_cpu_s"] = on_cpu / 1e9
        shares.append(cpu / (ticks * 1e3 / tsc_mhz))
    return (f"host CPU time of QEMU's vCPU thread (TSC offset from {len(sync)} sync marks, "
            f"drift {drift / tsc_mhz / 1e3:.2f} ms; QEMU got a median "
            f"{100 * statistics.median(shares):.0f}% of a host CPU)" if shares else None)


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def rng(values):
    values = [v for v in values if v is not None]
    return (min(values), max(values)) if values else (None, None)


def median_interval(values, confidence=0.95):
    """A distribution-free confidence interval of the median of @values: the
    order statistics k and n + 1 - k (from 1) for the largest k whose
    binomial tail, P(fewer than k of n below the median), is at most half of
    1 - @confidence; None for too few values."""
    values = sorted(values)
    n, k = len(values), 0
    for i in range(1, n // 2 + 1):
        if sum(math.comb(n, j) for j in range(i)) / 2 ** n <= (1 - confidence) / 2:
            k = i
    return (values[k - 1], values[n - k]) if k else None


def ratio_spread(values):
    """Median, its 95% confidence interval, half of it in percent of the
    median, and the range, of per-repetition ratios; None for too few."""
    values = [v for v in values if v is not None]
    interval = median_interval(values)
    if interval is None:
        return None
    median = statistics.median(values)
    lo, hi = interval
    return median, lo, hi, 50 * (hi - lo) / median, min(values), max(values), len(values)


# The ratios the series is judged by, each a cost per sample over another,
# paired by repetition: (name, numerator, denominator), as (shape, depth,
# sampler).
RATIOS = [
    ("64 frames: chain / IP", ("dense", 64, "kernel-chain"), ("dense", 64, "kernel-ip")),
    ("8 frames: chain / IP", ("dense", 8, "kernel-chain"), ("dense", 8, "kernel-ip")),
    ("64-frame chain: one frame per page / dense", ("sparse", 64, "kernel-chain"),
     ("dense", 64, "kernel-chain")),
    ("64 frames: chain + host part / chain", ("dense", 64, "kernel-host"),
     ("dense", 64, "kernel-chain")),
]
# Half the confidence interval of the median chain / IP must be within
# this, in percent of the median, for a run to judge a change of the costs.
SPREAD_PERCENT = 10


def ratio_lines(groups, rates):
    """The RATIOS per rate, with their spread over repetitions."""
    rows = []
    for name, num, den in RATIOS:
        for rate in rates:
            pairs = defaultdict(dict)
            for key, part in (("num", num), ("den", den)):
                for r in groups.get(part + (rate,), []):
                    pairs[r["rep"]][key] = r["cost_us"]
            values = [p["num"] / p["den"] for p in pairs.values()
                      if p.get("num") is not None and p.get("den")]
            spread = ratio_spread(values)
            if spread is None:
                continue
            q2, q1, q3, half, lo, hi, n = spread
            rows.append(f"| {name} | {rate} | {n} | {q2:.2f}x | {q1:.2f}-{q3:.2f} | "
                        f"{half:.1f}% | {lo:.2f}-{hi:.2f} |")
    # No header without rows: a run whose configurations give no ratio.
    if not rows:
        return []
    return ["Ratios of the cost per sample, per repetition (the configurations ran in "
            "turn in each repetition): the median, its 95% confidence interval, half of "
            f"that in percent of the median (within {SPREAD_PERCENT}% lets a run judge a "
            "change of the costs), and the range of the repetitions.", "",
            "| ratio | rate Hz | reps | median | 95% interval | +- | range |",
            "|---|---:|---:|---:|---|---:|---|"] + rows + [""]


def units_lines(path):
    """The work of the kernel's walks per sample, from units.csv (-U)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return []
    md = ["Work of the kernel's walks (bench -U: KVM's tracepoints kvm_guest_callchain_walk "
          "and kvm_guest_stack_window_walk, in runs of their own, whose times don't count). "
          "Per chain walk: frame records read, guest paging-structure entries read, page "
          "frames looked up in the VMM's page tables and found in the vCPU's cache, nofault "
          "copies.  The least a chain walk can do is one 16-byte copy per frame record; "
          "\"x limit\" is copies / frame records.  Stack windows: per sample, the pieces, "
          "bytes and the same counts.", "",
          "| stack | sampler | samples | chain walks/sample | records | entries | lookups | "
          "cache hits | copies | x limit | window pieces/sample | bytes | entries | lookups "
          "| cache hits | copies |",
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    groups = defaultdict(lambda: defaultdict(int))
    for r in rows:
        g = groups[(r["shape"], int(r["depth"]), r["sampler"])]
        for k, v in r.items():
            if k not in ("shape", "sampler"):
                g[k] += int(v)
    for (shape, depth, sampler), g in sorted(groups.items()):
        walks, samples, pieces = g["chain_walks"], g["samples"], g["window_walks"]
        cells = [stack_name(shape, depth), sampler, f"{samples:,}"]
        if walks:
            cells += [f"{walks / max(samples, 1):.2f}"] + \
                     [f"{g[k] / walks:.1f}" for k in ("records", "entries", "lookups",
                                                     "cached", "copies")] + \
                     [f"{g['copies'] / g['records']:.2f}" if g["records"] else ""]
        else:
            cells += [""] * 7
        if pieces and samples:
            cells += [f"{pieces / samples:.2f}"] + \
                     [f"{g[k] / samples:,.1f}" for k in ("window_bytes", "window_entries",
                                                        "window_lookups", "window_cached",
                                                        "window_copies")]
        else:
            cells += [""] * 6
        md.append("| " + " | ".join(cells) + " |")
    md.append("")
    return md


def main():
    path = sys.argv[1]
    outdir = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(path))
    meta, micro, rows = load(path)
    phases = "smoke-phases.csv" if os.path.basename(path).startswith("smoke") else "phases.csv"
    basis = host_cpu_rel(os.path.dirname(os.path.abspath(path)), phases, rows,
                         float(meta.get("tsc_mhz", 2596)))
    if basis is None:
        basis = ("L1 wall time, upper quartiles of the phase rates (no host clock data: "
                 "host preemption of QEMU is not corrected)")
    add_costs(rows)

    groups = defaultdict(list)
    for r in rows:
        groups[(r["shape"], r["depth"], r["sampler"], r["rate_hz"])].append(r)
    reps = sorted({r["rep"] for r in rows})

    def stat(shape, depth, sampler, rate, key):
        g = groups.get((shape, depth, sampler, rate), [])
        return med([r[key] for r in g]), rng([r[key] for r in g])

    def chain_cost(shape, depth, rate, key):
        """kernel-chain minus kernel-ip, paired by repetition."""
        by_rep = defaultdict(dict)
        for s in ("kernel-ip", "kernel-chain"):
            for r in groups.get((shape, depth, s, rate), []):
                by_rep[r["rep"]][s] = r
        out = []
        for pair in by_rep.values():
            if len(pair) < 2:
                continue
            ip, ch = pair["kernel-ip"], pair["kernel-chain"]
            if key == "rel":
                out.append(100 * (ip["rel_throughput"] - ch["rel_throughput"]))
            elif ip["cost_us"] is not None and ch["cost_us"] is not None:
                out.append(ch["cost_us"] - ip["cost_us"])
        return med(out), rng(out)

    rates = sorted({r["rate_hz"] for r in rows if r["sampler"] != "none"})
    md = []
    md.append("# Guest call-chain sampling: in the kernel vs in the VMM")
    md.append("")
    md.append(f"L1 kernel {meta.get('kernel', '?').split()[0]} under QEMU TCG (nested SVM); "
              f"{len(reps)} repetitions; each run {meta.get('measured_s', '?').split()[0]} s "
              f"in alternating sampler off/on phases of {meta.get('phase_ms', '?')} ms; the "
              "guest spins at the bottom of its stack.  Cells: guest work rate with the "
              "sampler on / off, median [min-max] over repetitions, then delivered samples "
              f"per second (median).  Work rates per {basis}.")
    md.append("")
    md.append("| stack | rate Hz | " + " | ".join(SAMPLERS) +
              " | chain cost (pp) |")
    md.append("|---|---:|" + "---|" * len(SAMPLERS) + "---|")
    for shape, depth in STACKS:
        ctrl = groups.get((shape, depth, "none", 0), [])
        if ctrl:
            m, (lo, hi) = stat(shape, depth, "none", 0, "rel_throughput")
            md.append(f"| {stack_name(shape, depth)} | control: no sampler | "
                      f"{m:.3f} [{lo:.3f}-{hi:.3f}] |" + " |" * (len(SAMPLERS) - 1) + " |")
        for rate in rates:
            if not any((shape, depth, s, rate) in groups for s in SAMPLERS):
                continue
            cells = []
            for s in SAMPLERS:
                g = groups.get((shape, depth, s, rate))
                if not g:
                    cells.append("")
                    continue
                m, (lo, hi) = stat(shape, depth, s, rate, "rel_throughput")
                sps, _ = stat(shape, depth, s, rate, "samples_per_s")
                cells.append(f"{m:.2f} [{lo:.2f}-{hi:.2f}] {sps:,.0f}/s")
            cc, (clo, chi) = chain_cost(shape, depth, rate, "rel")
            cells.append(f"{cc:.1f} [{clo:.1f}-{chi:.1f}]" if cc is not None else "")
            md.append(f"| {stack_name(shape, depth)} | {rate} | " + " | ".join(cells) + " |")
    md.append("")

    # Cost per sample where the samplers keep up, and chain completeness.
    md.append("Cost per delivered sample, in microseconds of (emulated) vCPU time: the extra "
              "time the \"on\" phases took for their work, divided by their samples; median "
              "over repetitions.  \"chain\": kernel-chain minus kernel-ip, per repetition.")
    md.append("")
    md.append("| stack | rate Hz | " + " | ".join(SAMPLERS) + " | chain |")
    md.append("|---|---:|" + "---:|" * len(SAMPLERS) + "---:|")
    for shape, depth in STACKS:
        for rate in (1000, 5000):
            if not any((shape, depth, s, rate) in groups for s in SAMPLERS):
                continue
            cells = []
            for s in SAMPLERS:
                c, _ = stat(shape, depth, s, rate, "cost_us")
                cells.append(f"{c:.0f}" if c is not None else "")
            cc, _ = chain_cost(shape, depth, rate, "us")
            cells.append(f"{cc:.0f}" if cc is not None else "")
            md.append(f"| {stack_name(shape, depth)} | {rate} | " + " | ".join(cells) + " |")
    md.append("")
    md.extend(ratio_lines(groups, rates))
    comp = []
    for s in ("kernel-chain", "kernel-host", "kernel-stack", "user", "user-fast"):
        g = [r for r in rows if r["sampler"] == s and r["complete_frac"] is not None]
        if g:
            checked = sum(r["in_loop"] for r in g)
            done = sum(r["complete"] for r in g)
            comp.append(f"{s} {done:,}/{checked:,} ({100 * done / checked:.2f}%, worst run "
                        f"{100 * min(r['complete_frac'] for r in g):.1f}%)")
    md.append("Complete chains (exactly the recorded return addresses, up to the outermost "
              "frame; for kernel-stack, the frame-pointer chain as far as its 8 KiB stack "
              "window holds it, so never for 64 frames one per page), of the samples in the "
              "work loop: " + "; ".join(comp) + ".")
    sizes = []
    for s in ("kernel-ip", "kernel-chain", "kernel-host", "kernel-stack"):
        b = [float(r["bytes_per_sample"]) for r in rows
             if r["sampler"] == s and r.get("bytes_per_sample")]
        if b:
            sizes.append(f"{s} {statistics.median(b):,.0f}")
    if sizes:
        md.append("Bytes per sample in perf's ring (median): " + ", ".join(sizes) + ".")
    lost = sum(r["lost"] for r in rows)
    pages = {(r["shape"], r["depth"]): r["stack_pages"] for r in rows}
    md.append("Stack pages under the frames: " +
              ", ".join(f"{stack_name(s, d)}: {pages[(s, d)]}"
                        for s, d in STACKS if (s, d) in pages) +
              f".  Lost samples: {lost}.")
    for m in micro:
        if m.startswith("dense d=64") or m.startswith("sparse"):
            md.append(f"Pieces of one userspace sample, timed alone ({m.split(':')[0]}): "
                      + m.split(":", 1)[1].strip() + ".")
    md.append("")
    md.extend(units_lines(os.path.join(os.path.dirname(os.path.abspath(path)),
                                       "smoke-units.csv" if phases.startswith("smoke")
                                       else "units.csv")))
    with open(os.path.join(outdir, "results.md"), "w") as f:
        f.write("\n".join(md))

    plot(groups, rates, reps, os.path.join(outdir, "overhead.png"))


def plot(groups, rates, reps, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(18, 6))
    for s in SAMPLERS:
        for shape, depth in STACKS:
            xs, ys, lo, hi, sps, cost = [], [], [], [], [], []
            for rate in rates:
                g = groups.get((shape, depth, s, rate))
                if not g:
                    continue
                rel = [r["rel_throughput"] for r in g]
                xs.append(rate)
                ys.append(statistics.median(rel))
                lo.append(ys[-1] - min(rel))
                hi.append(max(rel) - ys[-1])
                sps.append(statistics.median(r["samples_per_s"] for r in g))
                cost.append(med([r["cost_us"] for r in g]))
            if not xs:
                continue
            label = f"{s}, {stack_name(shape, depth)}"
            kw = dict(color=COLOR[s], linestyle=STYLE[(shape, depth)],
                      marker=MARK[(shape, depth)], label=label, markersize=5)
            axes[0].errorbar(xs, ys, yerr=[lo, hi], capsize=3, **kw)
            axes[1].plot(xs, sps, **kw)
            axes[2].plot(xs, cost, **kw)

    axes[0].set_title("Guest throughput, sampler on / off\n(median, bars: min-max)")
    axes[0].set_ylabel("relative throughput")
    axes[0].set_ylim(0, 1.1)
    axes[0].axhline(1.0, color="black", linewidth=0.5)
    axes[1].set_title("Delivered samples per second (median)")
    axes[1].set_ylabel("samples/s")
    axes[1].plot(rates, rates, color="black", linewidth=0.8, linestyle="-.",
                 label="requested")
    axes[1].set_yscale("log")
    axes[2].set_title("Cost per delivered sample (median)\n"
                      "extra vCPU time of the 'on' phases / samples")
    axes[2].set_ylabel("microseconds of vCPU time")
    axes[2].set_yscale("log")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("requested sampling rate (Hz)")
        ax.set_xticks(rates)
        ax.set_xticklabels([f"{r // 1000}k" if r >= 1000 else str(r) for r in rates])
        ax.grid(True, which="both", alpha=0.3)
    from matplotlib.lines import Line2D
    handles, labels = axes[0].get_legend_handles_labels()
    h1, l1 = axes[1].get_legend_handles_labels()
    # One column per sampler (3 stacks each), the last for "requested".
    blank = Line2D([], [], linestyle="none")
    handles += [h1[-1], blank, blank]
    labels += [l1[-1], "", ""]
    fig.legend(handles, labels, loc="lower center", ncol=(len(handles) + 2) // 3,
               fontsize=9, frameon=False)
    fig.suptitle("Guest call-chain sampling in L1 (QEMU TCG, nested SVM): "
                 f"in-kernel vs userspace, {len(reps)} repetitions", fontsize=13)
    fig.tight_layout(rect=(0, 0.14, 1, 0.95))
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
