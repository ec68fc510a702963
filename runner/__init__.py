"""dlrepro's in-container harness.

Mounted read-only into every container and run as ``python -m runner JOB.json OUTDIR``
(one job) or ``python -m runner.supervise JOBS_DIR OUT_DIR`` (every job of a plan,
one process each). Python 3.6 syntax, standard library + numpy + the framework only,
so that it runs inside old framework images.
"""
