"""The fraction-of-peak figure's "now" label when bundles of several kinds are reported together: a bundle with no
thread count (an LSTM job) beside ones with thread counts makes the column float (NaN), and the label still reads
the whole count (``dlrepro report`` of a torch7 FCN bundle and a CNTK LSTM bundle raised TypeError before)."""

import numpy as np
import pandas as pd

from dlrepro.views import plots


def test_a_float_thread_count_reads_as_a_whole_number_of_threads():
    threads = pd.Series([1, 2, None], dtype="float64")
    assert [plots._now_label("fp32", t) for t in threads] == [
        "now, fp32, 1 thread",
        "now, fp32, 2 threads",
        "now, fp32",
    ]
    assert plots._now_label("bf16", np.int64(4)) == "now, bf16, 4 threads"
