"""Run one of a study's own training scripts inside the suite's image of its framework and print the wall and
process CPU seconds of each of its training steps as one JSON line (``PEER {...}``).

Used by benchmarks/study_parity.py (``docker run`` in the suite's image; Python 3.6 syntax, stdlib, numpy and the
framework only). The study's files are read from its repository (mounted read-only) and copied with their folder
to a temporary one, which is removed afterwards. What is changed is listed in the output (``edited``):

- tensorflow: SCRIPT (a TensorFlow 1.x script) runs as ``__main__`` with ARGS; a line ``print X`` (Python 2)
  becomes ``print(X)``. A step is one ``tf.Session.run`` call after the first (the variables' initialisation).
- caffe: SCRIPT is the net prototxt; the solver is ``solver.prototxt`` beside it, run as ``caffe train`` runs it
  (``Solver::Step``) through pycaffe's ``solver.step(1)``. The data layer's ``batch_size`` becomes ARGS[0] and its
  ``source`` an LMDB of random Datums written here (1 x 1 x 26752 bytes, random labels: the study's fake_data LMDB
  is not in its repository); the solver's ``net`` is the edited prototxt, ``solver_mode`` CPU.
- notebook: SCRIPT is one of DeepLearningFrameworks' CNN notebooks (notebook()), ARGS the call that ends its step
  and the mini-batch size (with ``--window``, then the call that waits for the steps' results).
- mxnet: SCRIPT (train_fake_data.py) runs as ``__main__`` with ARGS plus ``--data-dir``: a RecordIO file of random
  1 x 26752 grey PNG images written here (the study's fakedata is not in its repository). A step is the time
  between two calls of its batch-end callback (``mx.callback.Speedometer``, which the study's log reads: the first
  call only starts the clock).
- torch7: SCRIPT (a Lua Torch 7 script) runs unchanged under ``luajit`` with ARGS, after a prelude (TORCH7_PRELUDE,
  written beside it) that preloads stand-ins for the packages the image lacks (``cutorch``: setDevice and
  synchronize do nothing, the script runs nn on the CPU; ``sys``: tic and toc on a torch.Timer; ``xlua``: empty,
  optim's Logger requires it and the script never logs) and wraps ``optim.sgd``. A step is the time between two
  returns of ``optim.sgd`` (the script's loop from one update to the next, its ``input:copy`` included: the first
  return only starts the clock); CPU seconds are the LuaJIT process's ``os.clock()`` (every thread). ``inside``: the
  seconds spent in ``optim.sgd`` of each step, the rest is the loop's own work.

CPU seconds are ``time.process_time`` (every thread of the process), wall seconds ``time.perf_counter``.

    python study_parity_peer.py FRAMEWORK SCRIPT STEPS [--subs JSON] [--decoded] [--window W] -- ARGS...

STEPS is how many steps to time (the script must run at least that many); the output holds the first STEPS.
``--subs``: [[file, old, new], ...], text changed in the study's files first (each ``old`` exactly once, or
[file, old, new, count]: ``count`` times): a variant that takes one piece of the study's step out, to measure what
it costs, or a GPU call made a CPU one (benchmarks/study_parity.py).
``--decoded`` (mxnet): the script's ImageRecordIter read in full before training and served as resident arrays
(decoded_iterator): its step without the decoding. ``--window W`` (notebook): the output holds one value, the
seconds per step of steps W+1 to STEPS timed as one window (notebook()).
"""

import json
import os
import re
import runpy
import shutil
import struct
import sys
import tempfile
import time
import zlib

import numpy as np

PRINT_STATEMENT = re.compile(r"^(\s*)print (?!\()(.+?)\s*$")
FEATURES = 26752  # DLBench's FCN input and class count (26752 = 1 x 1 x 26752)


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


class Clock(object):
    """Wall and CPU seconds of timed calls (``around``) or between marks (``mark``); ``inside``: where a step is
    from mark to mark, the seconds of the call that ends it (torch7_clock)."""

    def __init__(self):
        self.wall, self.cpu, self.inside, self.last = [], [], [], None

    def around(self, call):
        def timed(*a, **k):
            wall, cpu = time.perf_counter(), time.process_time()
            out = call(*a, **k)
            self.wall.append(time.perf_counter() - wall)
            self.cpu.append(time.process_time() - cpu)
            return out

        return timed

    def mark(self):
        now = (time.perf_counter(), time.process_time())
        if self.last is not None:
            self.wall.append(now[0] - self.last[0])
            self.cpu.append(now[1] - self.last[1])
        self.last = now


def run_script(target, args):
    sys.argv, sys.path[0] = [target] + args, os.path.dirname(target)
    os.chdir(os.path.dirname(target))
    runpy.run_path(target, run_name="__main__")


def tensorflow(folder, target, args, steps):
    text, edited = converted(target)
    with open(target, "w") as f:
        f.write(text)
    import tensorflow as tf

    clock = Clock()
    tf.Session.run = clock.around(tf.Session.run)
    run_script(target, args)
    clock.wall, clock.cpu = clock.wall[1:], clock.cpu[1:]  # the first call initialises the variables
    return clock, edited, tf.__version__


def lmdb_of_datums(path, count, rng):
    """An LMDB at ``path`` of ``count`` Caffe Datums (1 x 1 x FEATURES bytes, a random label each), written through
    liblmdb (ctypes: the image has the library, not its Python module)."""
    import ctypes

    from caffe.proto import caffe_pb2

    lib = ctypes.CDLL("liblmdb.so.0")

    class Val(ctypes.Structure):
        _fields_ = [("size", ctypes.c_size_t), ("data", ctypes.c_void_p)]

    def check(rc, what):
        if rc:
            raise RuntimeError("lmdb %s: %d" % (what, rc))

    env, txn, dbi = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_uint()
    os.makedirs(path)
    check(lib.mdb_env_create(ctypes.byref(env)), "env_create")
    check(lib.mdb_env_set_mapsize(env, ctypes.c_size_t(1 << 32)), "set_mapsize")
    check(lib.mdb_env_open(env, path.encode(), 0, 0o664), "env_open")
    check(lib.mdb_txn_begin(env, None, 0, ctypes.byref(txn)), "txn_begin")
    check(lib.mdb_dbi_open(txn, None, 0, ctypes.byref(dbi)), "dbi_open")
    for i in range(count):
        datum = caffe_pb2.Datum(
            channels=1,
            height=1,
            width=FEATURES,
            label=int(rng.randint(FEATURES)),
            data=rng.randint(0, 256, FEATURES).astype(np.uint8).tobytes(),
        )
        key, value = ("%08d" % i).encode(), datum.SerializeToString()
        kbuf, vbuf = ctypes.create_string_buffer(key, len(key)), ctypes.create_string_buffer(value, len(value))
        check(
            lib.mdb_put(
                txn,
                dbi,
                ctypes.byref(Val(len(key), ctypes.addressof(kbuf))),
                ctypes.byref(Val(len(value), ctypes.addressof(vbuf))),
                0,
            ),
            "put",
        )
    check(lib.mdb_txn_commit(txn), "txn_commit")
    lib.mdb_env_close(env)


def caffe(folder, target, args, steps):
    import caffe as caffe_

    batch = int(args[0])
    source = os.path.join(folder, "fake_data.lmdb")
    lmdb_of_datums(source, batch * 4, np.random.RandomState(0))
    edited, out = [], []
    with open(target) as f:
        for number, line in enumerate(f, 1):
            new = re.sub(r"(batch_size:\s*)\d+", r"\g<1>%d" % batch, line)
            new = re.sub(r'(source:\s*)"[^"]*"', r'\1"%s"' % source, new)
            if new != line:
                edited.append("%s line %d: %s" % (os.path.basename(target), number, new.strip()))
            out.append(new)
    with open(target, "w") as f:
        f.write("".join(out))
    solver = os.path.join(folder, "solver.prototxt")
    with open(solver) as f:
        lines = [line for line in f if not re.match(r"\s*(net|solver_mode|max_iter):", line)]
    lines += ['net: "%s"\n' % target, "solver_mode: CPU\n", "max_iter: %d\n" % steps]
    edited.append("solver.prototxt: net %s, solver_mode CPU, max_iter %d" % (os.path.basename(target), steps))
    with open(solver, "w") as f:
        f.write("".join(lines))
    caffe_.set_mode_cpu()
    run = caffe_.get_solver(solver)
    clock = Clock()
    step = clock.around(run.step)
    for _ in range(steps):
        step(1)
    return clock, edited, getattr(caffe_, "__version__", "?")


def png_grey(row):
    """A PNG file (bytes) of one row of 8-bit grey pixels."""

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", row.size, 1, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" + row.tobytes()))
        + chunk(b"IEND", b"")
    )


def decoded_iterator(mx, record_iter):
    """An ImageRecordIter stand-in: the same records through ``record_iter`` (the real ImageRecordIter: its
    decoding, its mean image) read in full when made, before training, then served as resident arrays by an
    NDArrayIter (its data and label named as ImageRecordIter's: data, softmax_label)."""

    def made(**kwargs):
        source = record_iter(**kwargs)
        data, label = [], []
        for batch in source:
            data.append(batch.data[0].copy())
            label.append(batch.label[0].copy())
        del source
        return mx.io.NDArrayIter(
            mx.nd.concat(*data, dim=0), mx.nd.concat(*label, dim=0), kwargs["batch_size"], shuffle=False
        )

    return made


def mxnet(folder, target, args, steps, decoded=False):
    import mxnet as mx

    data = os.path.join(folder, "fakedata") + "/"
    os.makedirs(data)
    count = int(args[args.index("--num-examples") + 1])
    rng = np.random.RandomState(0)
    record = mx.recordio.MXRecordIO(data + "train.rec", "w")
    for i in range(count):
        header = mx.recordio.IRHeader(0, float(rng.randint(FEATURES)), i, 0)
        record.write(mx.recordio.pack(header, png_grey(rng.randint(0, 256, FEATURES).astype(np.uint8))))
    record.close()
    clock, speedometer = Clock(), mx.callback.Speedometer

    class Timed(speedometer):
        def __call__(self, param):
            clock.mark()
            return speedometer.__call__(self, param)

    mx.callback.Speedometer = Timed
    edited = ["--data-dir: %d random PNG records (train.rec) written here" % count]
    if decoded:
        mx.io.ImageRecordIter = decoded_iterator(mx, mx.io.ImageRecordIter)
        edited.append("--decoded: ImageRecordIter read in full before training, then an NDArrayIter of its arrays")
    run_script(target, args + ["--data-dir", data])
    return clock, edited, mx.__version__


TORCH7_PRELUDE = r"""-- study_parity_peer.py: stand-ins for packages the image lacks, then the study's script, unchanged
local out, script = arg[1], arg[2]
local rest = {[0] = script}
for i = 3, #arg do rest[#rest + 1] = arg[i] end
arg = rest
require 'torch'
package.preload['cutorch'] = function()
   cutorch = {setDevice = function() end, synchronize = function() end}
   return cutorch
end
package.preload['sys'] = function()
   local clock = torch.Timer()
   sys = {tic = function() clock:reset() end, toc = function() return clock:time().real end}
   return sys
end
package.preload['xlua'] = function() xlua = {} return xlua end
require 'optim'
local timer, sgd, calls = torch.Timer(), optim.sgd, {}
optim.sgd = function(...)
   local wall, cpu = timer:time().real, os.clock()
   local x, f = sgd(...)
   calls[#calls + 1] = string.format('%.9f %.9f %.9f %.9f', wall, cpu, timer:time().real, os.clock())
   return x, f
end
dofile(script)
local f = assert(io.open(out, 'w'))
f:write(table.concat(calls, '\n'), '\n')
f:close()
"""


def torch7_clock(lines):
    """A Clock of a Torch 7 script's steps from the prelude's lines (one per ``optim.sgd`` call: wall and CPU
    seconds at its start, then at its return): a step from one return to the next, the first return starting the
    clock; ``inside``: each step's seconds in ``optim.sgd``."""
    calls = [[float(v) for v in line.split()] for line in lines if line.strip()]
    clock = Clock()
    for start, end in zip(calls, calls[1:]):
        clock.wall.append(end[2] - start[2])
        clock.cpu.append(end[3] - start[3])
    clock.inside = [end[2] - end[0] for end in calls[1:]]
    return clock


def torch7(folder, target, args, steps):
    import subprocess

    prelude, times = os.path.join(folder, "peer_prelude.lua"), os.path.join(folder, "peer_times.txt")
    with open(prelude, "w") as f:
        f.write(TORCH7_PRELUDE)
    subprocess.check_call(["luajit", prelude, times, target] + args, cwd=folder)
    with open(times) as f:
        clock = torch7_clock(f.read().splitlines())
    with open("/opt/torch7/SOURCES") as f:
        version = "scm-" + dict(line.split(None, 1) for line in f if line.strip())["torch7"][:7]
    return (
        clock,
        [
            "package.preload: cutorch (setDevice, synchronize: no-ops), sys (tic, toc: a torch.Timer), xlua (empty)",
            "optim.sgd wrapped: wall and CPU seconds at each call and return",
        ],
        version,
    )


def substituted(folder, subs):
    """Apply ``subs`` ([[file, old, new]] or [[file, old, new, count]]: ``old`` once, or ``count`` times, in the
    study's ``file``, in ``folder``; each occurrence made ``new``); the edits."""
    edited = []
    for name, old, new, *count in subs:
        path = os.path.join(folder, name)
        with open(path) as f:
            text = f.read()
        expected = count[0] if count else 1
        if text.count(old) != expected:
            sys.exit("peer: %r is %d times in %s, expected %d" % (old, text.count(old), name, expected))
        with open(path, "w") as f:
            f.write(text.replace(old, new))
        edited.append("%s: %r -> %r%s" % (name, old, new, " (%d times)" % expected if count else ""))
    return edited


def dlf_common(folder, samples):
    """DeepLearningFrameworks' ``common`` package for a notebook in ``folder``: params.py as it is, with EPOCHS 1;
    of utils.py only the functions a CNN notebook's training loop calls (yield_mb, shuffle_data: taken from the
    file by name, since the rest imports pandas, PIL and scikit-learn, which the images lack), with
    ``cifar_for_library`` giving ``samples`` random CIFAR-10-shaped images and labels (float32 in [0, 1]; int32,
    one-hot with one_hot: as the real one) and the GPU queries stubbed; the edits."""
    import ast
    import types

    sys.path.insert(0, folder)
    import common.params as params

    params.EPOCHS = 1
    path = os.path.join(folder, "common", "utils.py")
    with open(path) as f:
        tree = ast.parse(f.read())
    tree.body = [
        node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in ("yield_mb", "shuffle_data")
    ]
    utils = types.ModuleType("common.utils")
    utils.np = np
    exec(compile(tree, path, "exec"), utils.__dict__)

    def cifar_for_library(channel_first=True, one_hot=False):
        rng = np.random.RandomState(0)
        x = rng.rand(samples, 3, 32, 32).astype(np.float32)
        x = x if channel_first else np.swapaxes(x, 1, 3)
        y = rng.randint(0, params.N_CLASSES, samples).astype(np.int32)
        if one_hot:
            y = np.eye(params.N_CLASSES, dtype=np.int32)[y]
        return x, x[: params.BATCHSIZE], y, y[: params.BATCHSIZE]

    utils.cifar_for_library = cifar_for_library
    utils.get_gpu_name = utils.get_cuda_version = utils.get_cudnn_version = lambda: "none (CPU)"
    sys.modules["common.utils"] = utils
    return [
        "common/params.py: EPOCHS 1",
        "common/utils.py: yield_mb and shuffle_data only; cifar_for_library: %d random images" % samples,
    ]


def notebook_script(cells):
    """(script, edits) of a notebook's code ``cells`` (source strings) up to its training loop (the cell marked
    "Main training loop", as every DLF CNN notebook but Gluon_CNN marks it: its entry adds the mark), run as one
    script: line magics (``%...``) and ``%%time`` dropped; a ``%%writefile PATH`` cell written to PATH (e.g.
    Keras_Theano's ~/.theanorc) instead of run."""
    last = next(i for i, c in enumerate(cells) if "Main training loop" in c)
    lines, edited = [], []
    for cell in cells[: last + 1]:
        head, _, body = cell.partition("\n")
        if head.startswith("%%writefile "):
            path = os.path.expanduser(head.split(None, 1)[1].strip())
            with open(path, "w") as f:
                f.write(body + "\n")
            edited.append("%%%%writefile %s: written" % path)
            continue
        lines += [line for line in cell.splitlines() if not line.startswith("%")]
    return "\n".join(lines), edited + ["cells 1-%d of %d, magics dropped" % (last + 1, len(cells))]


def attribute_of(name):
    """(owner, attribute name) of ``name``: module:Class.method (e.g. mxnet.module:Module.update) or module:function
    (e.g. caffe2.python.workspace:RunNet); the module imported."""
    import importlib

    module, _, attribute = name.partition(":")
    owner_name, _, attribute = attribute.rpartition(".")
    owner = importlib.import_module(module)
    return (getattr(owner, owner_name) if owner_name else owner), attribute


def notebook(folder, target, args, steps, window=None):
    """A DLF notebook: its code cells up to its training loop (notebook_script); a step is the time between two
    calls of ARGS[0] (attribute_of: the call that ends the loop's step). ``window`` (W, 1 to STEPS - 1): one value
    instead, the seconds per step from the end of step W to the end of step STEPS, each end waited for by ARGS[2]
    (module:function, e.g. mxnet.ndarray:waitall): for a notebook that waits for no step's result in its loop
    (Gluon_CNN: not until the epoch's ``asscalar()``), where per-step marks would time the dispatch, not the work."""
    import importlib

    if window is not None and not 1 <= window < steps:
        sys.exit("peer: --window %d: give 1 to %d warm-up steps (a window needs one before it)" % (window, steps - 1))
    with open(target) as f:
        cells = ["".join(c["source"]) for c in json.load(f)["cells"] if c["cell_type"] == "code"]
    script, edited = notebook_script(cells)
    edited = dlf_common(folder, int(args[1]) * (steps + 1)) + edited
    owner, method = attribute_of(args[0])
    clock, call, calls = Clock(), getattr(owner, method), []

    def marked(*a, **k):
        out = call(*a, **k)
        calls.append(1)
        if window is None:
            clock.mark()
        elif len(calls) in (window, steps):
            getattr(*attribute_of(args[2]))()
            clock.mark()
        return out

    setattr(owner, method, marked)
    os.chdir(folder)
    exec(compile(script, target, "exec"), {"__name__": "__main__"})
    if window is not None:
        clock.wall, clock.cpu = [s / (steps - window) for s in clock.wall], [s / (steps - window) for s in clock.cpu]
        edited.append("one window: steps %d-%d, waited for by %s at both ends" % (window + 1, steps, args[2]))
    framework = importlib.import_module(args[0].partition(":")[0].split(".")[0])
    return clock, edited, getattr(framework, "__version__", "?")


def main(argv):
    framework, script, steps = argv[0], argv[1], int(argv[2])
    args = argv[argv.index("--") + 1 :] if "--" in argv else []
    options = argv[: argv.index("--")] if "--" in argv else argv
    subs = json.loads(argv[argv.index("--subs") + 1]) if "--subs" in options else []
    extra = {"decoded": True} if "--decoded" in options else {}
    if "--window" in options:
        extra["window"] = int(argv[argv.index("--window") + 1])
    for option, owner in (("decoded", "mxnet"), ("window", "notebook")):
        if option in extra and framework != owner:
            sys.exit("peer: --%s is for %s, not %s" % (option, owner, framework))
    work = tempfile.mkdtemp(prefix="study-peer-")
    folder = os.path.join(work, "study")
    shutil.copytree(os.path.dirname(os.path.abspath(script)), folder)
    target = os.path.join(folder, os.path.basename(script))
    variant = substituted(folder, subs)
    run = {"tensorflow": tensorflow, "caffe": caffe, "mxnet": mxnet, "notebook": notebook, "torch7": torch7}[framework]
    clock, edited, version = run(folder, target, args, steps, **extra)
    edited = variant + edited
    timed = 1 if "window" in extra else steps  # a window: one value
    if len(clock.wall) < timed:
        sys.exit("peer: %d steps timed, %d asked" % (len(clock.wall), timed))
    print(
        "PEER "
        + json.dumps(
            {
                "script": script,
                "args": args,
                "edited": edited,
                "version": version,
                "threads": {k: os.environ.get(k) for k in sorted(os.environ) if "THREADS" in k},
                "wall": clock.wall[:timed],
                "cpu": clock.cpu[:timed],
                "inside": clock.inside[:timed],
            }
        )
    )
    shutil.rmtree(work)


if __name__ == "__main__":
    main(sys.argv[1:])
