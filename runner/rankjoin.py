"""A process-per-rank data-parallel job's measurements, joined from its ranks' records (runner.ranks).

Each rank measures its own part (runner.job.rank_record): the time of every measured iteration on its
device, its process's CPU time and its GPU board's energy over its window. The job's numbers are:

timing       per iteration, the slowest rank's time (the maximum over ranks of iteration i of repeat r):
             the step of a synchronous data-parallel job ends when its last rank's does. DDP's all-reduce
             makes the ranks' times nearly equal (each waits for the others inside the step), so the
             maximum differs little from rank 0's, but it is the one that bounds the step, so it is the one
             taken. ``timing.ranks_joined`` says so; every rank's own times stay in ``ranks``.
cpu_usage    cpu_seconds summed over every rank's process; effective_parallelism that sum over rank 0's
             window wall time (the ranks' windows span the same repeats, between barriers).
energy       cuda: the sum of every rank's GPU board (NVML, each rank samples its own), with each board's
             joules in ``boards``; unavailable, with the reason, when one rank's is missing. CPU: rank 0's
             RAPL reading unchanged, which already counts the whole packages every rank ran on.

J/sample is then that energy over every rank's samples (runner's total mini-batch per iteration:
dlrepro.store.tables).
"""

JOINED = "slowest rank per iteration (maximum over %d ranks)"


def _timing(timing, records):
    from runner import stats  # numpy: imported only once the job's thread count is set (runner.job)

    repeats = [[max(values) for values in zip(*per_rank)] for per_rank in zip(*[r["repeats"] for r in records])]
    summary = stats.summarize_repeats(repeats, stats.units_of(timing.get("sample")))
    return dict(
        timing,
        repeats=repeats,
        summary=summary,
        ranks_joined=JOINED % len(records),
        throughput=timing["samples_per_measurement"] / summary["median"],
    )


def _cpu_usage(usage, records):
    seconds = [(r.get("cpu_usage") or {}).get("cpu_seconds") for r in records]
    if not usage or None in seconds:
        return usage
    total = sum(seconds)
    return dict(
        usage,
        cpu_seconds=total,
        rank_cpu_seconds=seconds,
        effective_parallelism=total / usage["wall_seconds"] if usage["wall_seconds"] else None,
        method="%s, summed over the %d ranks' processes" % (usage.get("method") or "process CPU time", len(records)),
    )


def _energy(energy, records):
    boards = [((r.get("telemetry") or {}).get("energy") or {}) for r in records]
    missing = [
        (r["rank"], b.get("reason") or "no board energy recorded")
        for r, b in zip(records, boards)
        if b.get("status") != "ok"
    ]
    if missing:
        return {
            "status": "unavailable",
            "reason": "rank %d's GPU board energy is missing (%s): the job's energy "
            "is the sum of every rank's" % missing[0],
        }
    joules = sum(b["joules"] for b in boards)
    seconds = (energy or {}).get("seconds") or boards[0].get("seconds")
    return dict(
        energy or boards[0],
        status="ok",
        joules=joules,
        boards=[b["joules"] for b in boards],
        mean_w=joules / seconds if seconds else None,
        method="sum of %d ranks' GPU boards: %s" % (len(records), (energy or boards[0])["method"]),
    )


def join(result, job, records):
    """Set ``result``'s timing, cpu_usage and energy (result.json of rank 0, changed in place) to the job's,
    from ``records`` (every rank's record, rank 0's first, each with repeats, cpu_usage and telemetry)."""
    if len(records) < 2:
        return result
    timing = result.get("timing") or {}
    if timing.get("quantity") == "seconds per mini-batch" and all(r.get("repeats") for r in records):
        result["timing"] = _timing(result["timing"], records)
    result["cpu_usage"] = _cpu_usage(result.get("cpu_usage"), records)
    if job["device"] == "cuda":
        result["energy"] = _energy(result.get("energy"), records)
    return result
