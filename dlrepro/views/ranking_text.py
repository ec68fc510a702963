"""A ranking in words: the published order of frameworks beside the one measured here, for every view."""

import pandas as pd

from dlrepro.inputs.frameworks import display


def sentence(rank):
    """'alexnet-s b16: published (third party rerun, GTX Titan X): TensorFlow > MXNet > CNTK > Caffe; here (AMD
    EPYC, 2 threads): CNTK > Caffe > MXNet > TensorFlow (tau -0.55, n 4, p 0.28)' from a row of
    dlrepro.answers.ranking.COLUMNS: a published order beside the measured one, never called the study's conclusion
    (that word is for the claims of studies/*.yaml)."""

    def order(text):
        return " > ".join(display(t.strip()) for t in str(text).split(","))

    threads = "" if pd.isna(rank.threads) else ", %d thread%s" % (rank.threads, "s"[rank.threads == 1 :])
    line = "%s b%s: published (%s, %s): %s; here (%s%s): %s" % (
        rank.variant,
        rank.batch_size,
        rank.reference_kind.replace("_", " "),
        rank.published_hardware,
        order(rank.published_order),
        rank.measured_hardware,
        threads,
        order(rank.measured_order),
    )
    if pd.notna(rank.tau):
        line += " (tau %.2f, n %d, p %.2g)" % (rank.tau, rank.n, rank.p_value)
    return line
