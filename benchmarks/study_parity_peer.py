"""Run one of a study's own TensorFlow 1.x scripts, unchanged but for its Python 2 print statements, and print the
wall and process CPU seconds of each of its ``tf.Session.run`` calls as one JSON line (``PEER {...}``).

Used by benchmarks/study_parity.py inside the suite's tensorflow-1.4.0-cpu image (Python 3.6: this file keeps
3.6 syntax, stdlib and TensorFlow only). The script is read from the study's repository (mounted read-only), copied
with its directory to a temporary folder and run there as ``__main__`` with the arguments after ``--``; nothing of
it is kept. The only edit: a line ``print X`` (a Python 2 statement) becomes ``print(X)``; each edited line is
listed in the output (``edited``). CPU seconds are ``time.process_time`` (every thread of the process), wall seconds
``time.perf_counter``, both around each ``Session.run`` call (the first call is the script's variable
initialisation: ``calls[0]``).

    python study_parity_peer.py SCRIPT -- SCRIPT_ARGS...
"""
import json
import os
import re
import runpy
import shutil
import sys
import tempfile
import time

PRINT_STATEMENT = re.compile(r"^(\s*)print (?!\()(.+?)\s*$")


def converted(path):
    """(text, edited lines) of the script at ``path`` with its Python 2 print statements made calls."""
    out, edited = [], []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            match = PRINT_STATEMENT.match(line)
            if match:
                line = "%sprint(%s)\n" % (match.group(1), match.group(2))
                edited.append("line %d: %s" % (number, line.strip()))
            out.append(line)
    return "".join(out), edited


def main(argv):
    script, args = argv[0], argv[argv.index("--") + 1:] if "--" in argv else []
    work = tempfile.mkdtemp(prefix="study-peer-")
    folder = os.path.join(work, "study")
    shutil.copytree(os.path.dirname(os.path.abspath(script)), folder)
    text, edited = converted(script)
    target = os.path.join(folder, os.path.basename(script))
    with open(target, "w") as f:
        f.write(text)

    import tensorflow as tf
    calls, run = [], tf.Session.run

    def timed(self, *a, **k):
        wall, cpu = time.perf_counter(), time.process_time()
        out = run(self, *a, **k)
        calls.append((time.perf_counter() - wall, time.process_time() - cpu))
        return out

    tf.Session.run = timed
    sys.argv, sys.path[0] = [target] + args, folder
    os.chdir(folder)
    runpy.run_path(target, run_name="__main__")
    print("PEER " + json.dumps({"script": script, "args": args, "edited": edited, "tensorflow": tf.__version__,
                                "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
                                "wall": [c[0] for c in calls], "cpu": [c[1] for c in calls]}))
    shutil.rmtree(work)


if __name__ == "__main__":
    main(sys.argv[1:])
