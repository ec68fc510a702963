"""The store: what a run leaves on disk, written and read back.

``bundle`` writes and finds result bundles, ``tables`` derives the tidy summary and samples tables (with
``peak_columns``, each job's FLOPs and fraction of peak) and merges many bundles, ``records`` keeps the study
records, ``validate`` checks a bundle one concern at a time, ``archive`` packs a bundle with its specs, locks and
RO-Crate metadata into one verifiable tarball.

Above it, in one direction: dlrepro.answers.gather reads the store once per question and builds the answer model
of dlrepro.answers (pure rules and one model per question: a bundle's answer, a study's answer, a comparison);
dlrepro.views renders it (Markdown, HTML, figures, JSON; the terminal's is dlrepro.cli.render) and decides nothing.
"""
