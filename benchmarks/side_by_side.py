"""Two ways of running the same jobs, set side by side: the median seconds per mini-batch and its repeat-level
95% CI (runner.stats) of each way, whether each median lies inside the other's interval, and compare --against's
verdict (Mann-Whitney U on the repeat medians). Used by isolation.py and ranks_one.py."""

import tempfile

import pandas as pd

from dlrepro.answers import regression
from dlrepro.run import runs
from dlrepro.run.options import RunOptions
from dlrepro.store import tables


def _inside(value, low, high):
    return "yes" if low <= value <= high else "no"


def compare_ways(cases, ways, results=None, **common):
    """Run each (spec, variant, batch size) of ``cases`` once per way of ``ways`` ({label: RunOptions fields}, two
    of them; ``common``: the fields both share) and print one row per job of the first way's bundle. Fields that
    only say how the job ran (answers.configkey.CONFIGURATION's ``ranks``) are set alike before the comparison. Returns
    the bundles' folder."""
    results = results or tempfile.mkdtemp(prefix="dlrepro-side-by-side-")
    (a, b) = ways
    print(
        "%-34s %10s %21s %10s %21s %7s %7s  %s"
        % ("job", a[:10], "95% CI", b[:10], "95% CI", "a in b", "b in a", "compare --against")
    )
    for spec, variant, batch in cases:
        folders = {
            label: runs.run(
                spec,
                RunOptions(variants=[variant], batch_sizes=[batch], **common, **fields),
                results_dir=results,
                reporter=runs.Silent(),
            )
            for label, fields in ways.items()
        }
        rows = {label: tables.summary(folder).iloc[0] for label, folder in folders.items()}
        samples = {label: tables.samples(folder) for label, folder in folders.items()}
        samples = {label: s.assign(ranks=pd.array([pd.NA] * len(s), dtype="Int64")) for label, s in samples.items()}
        verdicts = regression.against_bundle(samples[a], samples[b])
        x, y = rows[a], rows[b]
        print(
            "%-34s %10.4f %10.4f-%-10.4f %10.4f %10.4f-%-10.4f %7s %7s  %s (%+.1f%%)"
            % (
                x["job_id"],
                x["median"],
                x["ci95_low"],
                x["ci95_high"],
                y["median"],
                y["ci95_low"],
                y["ci95_high"],
                _inside(x["median"], y["ci95_low"], y["ci95_high"]),
                _inside(y["median"], x["ci95_low"], x["ci95_high"]),
                verdicts["verdict"].iloc[0],
                100 * verdicts["change"].iloc[0],
            )
        )
    print("bundles under %s" % results)
    return results
