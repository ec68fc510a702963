"""How long the median's confidence interval takes (runner.stats.median_ci), at sizes a job can reach.

    python benchmarks/ci_speed.py

It runs inside the job's time limit before anything is saved, so it must stay far below a second even for a
long run (the term-by-term binomial sum it replaced took 0.46 s at 3,000 samples and minutes at 100,000).
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner import stats  # noqa: E402

if __name__ == "__main__":
    print("%10s %12s %s" % ("n", "seconds", "interval (ranks)"))
    for n in (6, 48, 3000, 100000, 1000000):
        values = list(range(n))
        start = time.perf_counter()
        found = stats.median_ci(values)
        print("%10d %12.6f %s" % (n, time.perf_counter() - start, found))
