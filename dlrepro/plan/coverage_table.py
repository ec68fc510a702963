"""The README's table "what can your hardware test": per standard host (PROFILES, every dataset fetched, today's
versions), per study, the claims it can test and the published cells it would judge (dlrepro.plan.coverage.plan);
`dlrepro plan all` prints it, and tests/plan/test_coverage.py checks that README.md holds what it prints."""

from dlrepro.plan.coverage import SHORT, Hardware, counts, every_dataset, inputs, plan

# the hosts of the README's table "what can your hardware test" (every dataset fetched)
PROFILES = (
    ("2 CPU cores (this project's build machine)", dict(cpus=2)),
    ("16-core CPU", dict(cpus=16)),
    ("K80", dict(gpu="K80", gpus=1, cpus=16)),
    ("GTX 1080", dict(gpu="GTX 1080", gpus=1, cpus=16)),
    ("P100", dict(gpu="P100", gpus=1, cpus=16)),
    ("V100", dict(gpu="V100", gpus=1, cpus=16)),
    ("A100", dict(gpu="A100", gpus=1, cpus=16)),
    ("H100/H200", dict(gpu="H100", gpus=1, cpus=16)),
    ("H100/H200, --allow-ptx-jit", dict(gpu="H100", gpus=1, cpus=16, allow_ptx_jit=True)),
    ("4 x V100", dict(gpu="V100", gpus=4, cpus=32)),
    ("4 x H100", dict(gpu="H100", gpus=4, cpus=64)),
)


def profile(name):
    """The Hardware of PROFILES entry ``name``, with every dataset."""
    return Hardware(datasets=every_dataset(), **dict(PROFILES)[name])


def _rest(why):
    """' (rest mostly: CAUSE)' when one cause holds more than half of the claims not testable, else each cause with
    its count; '' when there are none."""
    if not why:
        return ""
    top, n = max(why.items(), key=lambda kv: kv[1])
    if 2 * n > sum(why.values()):
        return " (rest mostly: %s)" % SHORT[top]
    return " (rest: %s)" % ", ".join("%s %d" % (SHORT[c], k) for c, k in why.items())


def markdown_table(studies, matrix):
    """The README's table: per PROFILES host, per study, the claims it can test (and the commonest cause of the
    rest), and the published cells it would judge (the published hardware) or only show (other hardware)."""
    lines = [
        "| hardware | "
        + " | ".join("%s claims testable | %s published cells" % ((s.title.split(" - ")[0],) * 2) for s in studies)
        + " |",
        "|---|" + "---|---|" * len(studies),
    ]
    given = {study.name: inputs(study, matrix) for study in studies}
    for name, _ in PROFILES:
        cells = []
        for study in studies:
            found = plan(given[study.name], profile(name))
            n, why = counts(found["claims"])
            m, _ = counts(found["cells"])
            measured = sum(o.testable for o in found["cells"])
            cells += [
                "%d of %d%s" % (n, len(found["claims"]), _rest(why)),
                "%d judged, %d shown of %d" % (m, measured - m, len(found["cells"])),
            ]
        lines.append("| %s | %s |" % (name, " | ".join(cells)))
    return "\n".join(lines) + "\n"
