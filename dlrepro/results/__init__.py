"""Results: what happens to measurements after the run.

``bundle`` writes and finds result bundles, ``tables`` derives the tidy summary and samples
tables (and merges many bundles), ``validate`` checks a bundle one concern at a time,
``compare`` sets measured against published values and bundles against each other, ``plots``
and ``report`` (with ``templates/``) render Markdown and self-contained HTML reports, and
``archive`` packs a bundle with its specs, locks and RO-Crate metadata into one verifiable
tarball.
"""
