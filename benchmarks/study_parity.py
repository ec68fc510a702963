"""A study's own code against the suite's jobs, side by side on one host (issue 55): DLBench's FCN-S scripts and
DeepLearningFrameworks' CNN notebooks.

    python benchmarks/study_parity.py [--dlbench PATH] [--dlf PATH] [--frameworks tensorflow,caffe,mxnet,torch7,
        dlf-mxnet,dlf-chainer,dlf-tensorflow,dlf-torch,dlf-gluon,...] [--threads 1,2] [--rounds 1] [--warmup 8]
        [--steps 8] [--results DIR]

PATH is a local copy of hclhkbu/dlbench (a git checkout: the commit read is ``git -C PATH rev-parse HEAD``; an unpacked
archive: give ``--commit``); its code is run, never copied into the project. For each framework (``STUDY``: DLBench's
script, the era image it runs in, the thread variables DLBench's scripts set) each round and thread count runs the units
P S.. S.. P: P is DLBench's script through benchmarks/study_parity_peer.py in the suite's image of that framework
(``docker run``, mini-batch 64, not pinned: as the study ran it); S0 is the suite's job ``fcn-s`` at that version,
mini-batch 64, with the suite's step (gradients pruned, every pool at the thread count, pinned); for TensorFlow and
Torch 7 also S1, the same job with DLBench's step (studies/dlbench.yaml ``steps``: gradients gate_op, thread_pools
intra_op), in the order P S0 S1 S1 S0 P (Torch 7's script runs with stand-ins for cutorch, sys and xlua, which its image
lacks: study_parity_peer.py); for MXNet also DLBench's script less one piece of its step at a time (``variants``,
--variants: which of them; STUDY["mxnet"] says what each changes: P-kv, P-mom, P-kv-mom, P-metric, P-decoded, P-dec1,
P-pin, P-w1, P-scale), in the order P P-kv ... S0 S0 ... P-kv P. Both sides: W warm-up steps (--warmup, 8), then T timed
(--steps, 8). CNTK is not run: DLBench's CNTK script is a BrainScript configuration for the ``cntk`` executable, which
the suite's CNTK images (PyPI wheels) do not have. DLF (``dlf-*``, PATH of --dlf a copy of
ilkarman/DeepLearningFrameworks): its CNN notebook (notebooks/<Framework>_CNN.ipynb: MXNet's Module and Gluon,
Chainer, CNTK, Caffe2, TensorFlow, PyTorch, Keras on Theano, TensorFlow and CNTK; its cells up to the training loop,
GPU calls made CPU ones, NCHW made NHWC where TensorFlow's CPU kernels need it, random CIFAR-10-shaped data:
study_parity_peer.py; Gluon's loop waits for no step's result, so its timed steps are one window, one value per
unit) against the suite's ``cifar10-vgg-synthetic`` job at mini-batch 64, both at the framework's default threads
(DLF set none; the MXNet Module, Gluon and Keras-on-Theano notebooks also at --threads N: the suite's variables for N
threads, pinned to N CPUs, both sides), in the order P S0 S0 P; for Caffe2 also the notebook with OMP_NUM_THREADS=1
(P-omp1), with OMP_WAIT_POLICY=PASSIVE (P-passive) and with the suite's GlobalInit call added after its imports
(P-init), in the order P P-omp1 P-passive P-init S0 S0 P-init P-passive P-omp1 P.

Printed per framework, thread count and way: the study's and the suite's median seconds per step, wall (the clock
around the step: over every timed step of every round; a notebook timed as one window, one value a unit on both
sides, each side's mean) and CPU (process CPU seconds, every thread, one value a unit on both sides: the suite's
cpu_usage.cpu_seconds over the measured window / T, the peer's mean of time.process_time over its timed steps; until
set 6 of 2026-12-07 the peer's every step, a median of steps against the suite's means), their ratio suite/study
and a 95% percentile bootstrap interval of that ratio (2000 resamples of each side's values, rounds pooled), with
the host's load average at the start, after each unit and at the end. A first suite job per framework, not counted,
builds (or finds) the image; the peer runs in the image it ran in (--images: given instead). The table is printed
after each round (rounds pooled so far) and at --deadline.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dlrepro.run import runs
from dlrepro.run.options import RunOptions, Step
from runner import settings
from runner.frameworks import Token

PEER = Path(__file__).resolve().parent / "study_parity_peer.py"
BATCH = 64
SUITE_STEP, DLBENCH_STEP = Step(), Step(gradients="gate_op", thread_pools="intra_op")


def threads_env(*names):
    return lambda threads: {name: str(threads) for name in names}


# DLBench's MXNet step without momentum and weight decay (train_model.py's FeedForward arguments)
PLAIN_SGD = [
    ["train_model.py", "momentum           = 0.9", "momentum           = 0.0"],
    ["train_model.py", "wd                 = 0.00001", "wd                 = 0.0"],
]
# an MXNet 0.12 metric that computes nothing and fetches nothing, only waits for the step's outputs (as 'ce' did
# before its numpy work): DLBench's per-step metric less its work, the sync point kept
WAIT_METRIC = (
    "type('WaitMetric', (mx.metric.EvalMetric,), "
    "{'update': lambda self, labels, preds: [p.wait_to_read() for p in preds]})('wait')"
)


# framework -> DLBench's FCN-S script (in PATH), the suite's era image (studies/dlbench.yaml versions: the nearest
# served), the thread variables DLBench set for "N threads" (synthetic/scripts/fc-benchmarks.sh, mxnetbm.py), the
# script's arguments for W + T steps, and the suite's ways of stepping
STUDY = {
    "tensorflow": dict(
        script="synthetic/experiments/tensorflow/fc/ffn26752bm.py",
        token="tensorflow@1.4.0",
        env=threads_env("OMP_NUM_THREADS"),
        args=lambda steps: ["-e", "1", "-b", str(BATCH), "-i", str(steps), "-d", "-1"],
        ways={"suite's step": SUITE_STEP, "DLBench's step": DLBENCH_STEP},
    ),
    "caffe": dict(
        script="synthetic/experiments/caffe/fc/ffn26752.prototxt",
        token="caffe@1.0.0",
        env=threads_env("OMP_NUM_THREADS"),
        args=lambda steps: [str(BATCH)],
        ways={"suite's step": SUITE_STEP},
    ),
    "mxnet": dict(
        script="synthetic/experiments/mxnet/fc/train_fake_data.py",
        token="mxnet@0.12.0",
        env=threads_env("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MXNET_CPU_WORKER_NTHREADS"),
        args=lambda steps: [
            "--network",
            "fcn5",
            "--num-epochs",
            "1",
            "--batch-size",
            str(BATCH),
            "--num-examples",
            str(BATCH * (steps + 1)),
        ],
        ways={"suite's step": SUITE_STEP},
        # the study's step less one piece at a time (train_model.py, train_fake_data.py; studies/dlbench.yaml
        # steps.MXNet.differs): P-kv without its kvstore ('device', passed as an object, so FeedForward pushes
        # every gradient to it and pulls every weight back); P-mom plain SGD (no momentum 0.9, no weight decay
        # 1e-5: the spec's FCN-S); P-kv-mom both; P-metric its 'ce' metric (the 64 x 26752 output fetched to the
        # host, cross-entropy in numpy) made WAIT_METRIC (waits for the outputs, as fetching them did); P-decoded
        # fed from arrays (NDArrayIter over the same records, decoded by the same ImageRecordIter before
        # training: the suite's resident mini-batch); P-dec1 its ImageRecordIter on 1 decoding thread, not 20;
        # P-pin the container pinned to the first N CPUs (the suite's job: pinned to N); P-w1 one engine worker
        # (the suite's), from 2 threads on (at 1 DLBench already sets one); P-scale its inputs scaled by 1/256 after
        # the mean image is taken off (ImageRecordIter's scale): the peer's random 0-255 pixels, less the mean,
        # through Normal(0.01) weights saturate the first sigmoid layer (pre-activations of s.d. about 120), whose
        # outputs and gradients then hold subnormal floats that the GEMMs after it take slow paths for; scaled, they
        # are of the suite's order (uniform [0, 1) inputs, Uniform(0.07) weights)
        variants={
            "P-kv": dict(args=["--kv-store", "local"]),
            "P-mom": dict(subs=PLAIN_SGD),
            "P-kv-mom": dict(args=["--kv-store", "local"], subs=PLAIN_SGD),
            "P-metric": dict(subs=[["train_model.py", "eval_metrics = ['ce']", "eval_metrics = " + WAIT_METRIC]]),
            "P-decoded": dict(peer=["--decoded"]),
            "P-dec1": dict(subs=[["train_fake_data.py", "preprocess_threads = 20", "preprocess_threads = 1"]]),
            "P-pin": dict(pin=True),
            "P-w1": dict(env={"MXNET_CPU_WORKER_NTHREADS": "1"}, min_threads=2),
            "P-scale": dict(
                subs=[
                    ["train_fake_data.py", "preprocess_threads = 20,", "preprocess_threads = 20, scale = 0.00390625,"]
                ]
            ),
        },
    ),
    # DLBench's command line (fc-benchmarks.sh: `th ffn26752bm.lua ...`, its -data left out); one step more than
    # asked: the peer's first step starts at the first update's return
    "torch7": dict(
        script="synthetic/experiments/torch/fc/ffn26752bm.lua",
        token="torch7@7.0",
        env=threads_env("OMP_NUM_THREADS"),
        args=lambda steps: [
            "-depth",
            "50",
            "-nGPU",
            "1",
            "-nThreads",
            "2",
            "-deviceId",
            "-1",
            "-batchSize",
            str(BATCH),
            "-shareGradInput",
            "true",
            "-nEpochs",
            "1",
            "-nIterations",
            str(steps + 1),
            "-dataset",
            "imagenet",
        ],
        ways={"suite's step": SUITE_STEP, "DLBench's step": DLBENCH_STEP},
    ),
}
for _entry in STUDY.values():
    _entry.update(study="dlbench", peer=None, spec="fcn", variant="fcn-s", subs=[])


# the last import line of DLF's Caffe2 notebook, and the suite's GlobalInit at the default threads appended to it
CAFFE2_IMPORT = "from caffe2.proto import caffe2_pb2"
CAFFE2_INIT = "; workspace.GlobalInit(['caffe2', '--caffe2_log_level=1'])"


def dlf(notebook, token, step_call, subs, env=None, variants=None, window=None, threads_by_env=False):
    """A DLF CNN notebook (ilkarman/DeepLearningFrameworks notebooks/), run on the CPU at the framework's default
    threads (as DLF ran it: no thread setting), a step ending at ``step_call``; ``subs``: (old, new) or (old, new,
    count) in the notebook, its GPU calls made CPU; ``env``: variables the notebook sets itself before its imports
    (the peer imports the framework earlier, to mark the step); ``window``: a call that waits for the steps'
    results (module:function), for a notebook whose loop waits for none: its timed steps are then one window, one
    value per unit (study_parity_peer.py notebook()); ``threads_by_env``: the framework's thread count is wholly
    its environment variables, so that --threads N runs the notebook with the suite's variables for N threads
    (runner.settings), pinned to N CPUs as the suite's job is (MXNet: its OpenMP pool and one engine worker; Theano:
    its BLAS's and OpenMP's)."""
    name = Token.parse(token).name

    def variables(threads):
        given = dict(env or {})
        if threads:
            given.update(settings.environment({"framework": name, "threads": threads, "device": "cpu"}))
        return given

    return dict(
        study="dlf",
        peer="notebook",
        script="notebooks/" + notebook,
        token=token,
        spec="cifar10-vgg",
        variant="cifar10-vgg-synthetic",
        env=variables,
        threads_by_env=threads_by_env,
        args=lambda steps: [step_call, str(BATCH)] + ([window] if window else []),
        ways={"suite's step": SUITE_STEP},
        subs=[[notebook] + list(sub) for sub in subs],
        variants=variants or {},
        window=bool(window),
    )


# TensorFlow 1.4's CPU kernels have no NCHW convolution or pooling: DLF's channels-first batches made channels-last
CHANNELS_LAST_DATA = ("cifar_for_library(channel_first=True", "cifar_for_library(channel_first=False")
# a DLF Keras notebook made channels-last: its image data format, its first layer's input shape and its batches (what
# the suite's Keras 2 adapter runs on the CPU, runner/adapters/keras2_adapter.py)
KERAS_CHANNELS_LAST = [
    ("set_image_data_format('channels_first')", "set_image_data_format('channels_last')"),
    ("input_shape=(3, 32, 32)", "input_shape=(32, 32, 3)"),
    CHANNELS_LAST_DATA,
]


STUDY.update(
    {
        "dlf-mxnet": dlf(
            "MXNet_CNN.ipynb",
            "mxnet@0.12.0",
            "mxnet.module:Module.update",
            [("mx.gpu(0)", "mx.cpu()")],
            threads_by_env=True,
        ),
        "dlf-chainer": dlf(
            "Chainer_CNN.ipynb",
            "chainer@3.4.0",
            "chainer.optimizers:MomentumSGD.update",
            [
                ("chainer.cuda.cupy.__version__", "None"),
                ("chainer.cuda.get_device(0).use()", "None"),
                ("sym.to_gpu()", "None"),
                ("data = cuda.to_gpu(data)", "data = data"),
                ("target = cuda.to_gpu(target)", "target = target"),
            ],
        ),
        "dlf-cntk": dlf("CNTK_CNN.ipynb", "cntk@2.5.1", "cntk.train.trainer:Trainer.train_minibatch", []),
        "dlf-caffe2": dlf(
            "Caffe2_CNN.ipynb",
            "caffe2@1.10.2",
            "caffe2.python.workspace:RunNet",
            [
                ("core.DeviceOption(caffe2_pb2.CUDA, 0)", "core.DeviceOption(caffe2_pb2.CPU)"),
                # caffe2.python.visualize imports matplotlib, which the image lacks; the notebook never calls it
                ("workspace, visualize, brew", "workspace, brew"),
                # Caffe2 1.10.2's brew.dropout requires is_test (the era's defaulted to training)
                ("'cudnn_exhaustive_search': True}", "'cudnn_exhaustive_search': True, 'is_test': False}"),
            ],
            # the notebook calls no GlobalInit: OpenMP's default threads (every CPU); the suite's job at the
            # default gets Caffe2's GlobalInit, one OpenMP thread. P-omp1: the notebook with OMP_NUM_THREADS=1;
            # P-init: the notebook with the suite's GlobalInit call (runner/adapters/caffe2_adapter.py
            # _global_init at the default threads) right after its imports; P-passive: the notebook's two OpenMP
            # threads, waiting asleep (the wheel's libgomp spins at its barriers by default)
            variants={
                "P-omp1": dict(env={"OMP_NUM_THREADS": "1"}),
                "P-passive": dict(env={"OMP_WAIT_POLICY": "PASSIVE"}),
                "P-init": dict(subs=[["Caffe2_CNN.ipynb", CAFFE2_IMPORT, CAFFE2_IMPORT + CAFFE2_INIT]]),
            },
        ),
        # model.fit: a step ends at the callbacks' batch end (its progress bar, verbose=1, included)
        "dlf-keras-theano": dlf(
            "Keras_Theano_CNN.ipynb",
            "keras-theano@2.1.5",
            "keras.callbacks:CallbackList.on_batch_end",
            [("device = cuda0", "device = cpu")],
            env={"KERAS_BACKEND": "theano"},
            threads_by_env=True,
        ),
        # the notebook's channels_first made channels_last (CHANNELS_LAST_DATA)
        "dlf-keras-tensorflow": dlf(
            "Keras_TF_CNN.ipynb",
            "keras-tensorflow@2.1.5",
            "keras.callbacks:CallbackList.on_batch_end",
            KERAS_CHANNELS_LAST,
        ),
        # CNTK is channels-first on the CPU too: the notebook as written, and the suite's Keras 2 adapter. P-nhwc: the
        # notebook made channels-last, what the layout costs CNTK (the adapter's CPU layout before 2026-12-07)
        "dlf-keras-cntk": dlf(
            "Keras_CNTK_CNN.ipynb",
            "keras-cntk@2.1.5",
            "keras.callbacks:CallbackList.on_batch_end",
            [],
            env={"KERAS_BACKEND": "cntk"},
            variants={"P-nhwc": dict(subs=[["Keras_CNTK_CNN.ipynb"] + list(sub) for sub in KERAS_CHANNELS_LAST])},
        ),
        # a step ends at the loop's Session.run (the first call, the variables' initialisation, starts the clock);
        # its six layers' data_format and the placeholder made channels-last (CHANNELS_LAST_DATA)
        "dlf-tensorflow": dlf(
            "Tensorflow_CNN.ipynb",
            "tensorflow@1.4.0",
            "tensorflow:Session.run",
            [
                ("data_format='channels_first'", "data_format='channels_last'", 6),
                ("shape=[None, 3, 32, 32]", "shape=[None, 32, 32, 3]"),
                CHANNELS_LAST_DATA,
            ],
        ),
        # the model's and the two batches' .cuda() calls (and the evaluation's, not run) made no-ops
        "dlf-torch": dlf("PyTorch_CNN.ipynb", "torch@1.0.0", "torch.optim:SGD.step", [(".cuda()", "", 4)]),
        # the loop waits for no step's result until the epoch's asscalar(): timed as one window, waited for by
        # waitall; its loop cell is not marked "Main training loop" (notebook_script's mark) as the others are
        "dlf-gluon": dlf(
            "Gluon_CNN.ipynb",
            "mxnet@0.12.0",
            "mxnet.gluon:Trainer.step",
            [("ctx = mx.gpu()", "ctx = mx.cpu()"), ("net.hybridize()", "net.hybridize()  # Main training loop")],
            window="mxnet.ndarray:waitall",
            threads_by_env=True,
        ),
    }
)


def deadline_of(text, now):
    """Epoch seconds of the first HH:MM UTC (``text``) after ``now`` (epoch seconds): 00:00 given at 22:41 is the
    next day's; exits naming --deadline when ``text`` is not HH:MM."""
    try:
        hours, minutes = (int(part) for part in text.split(":"))
    except ValueError:
        sys.exit("--deadline %s: not HH:MM; give a UTC time such as 00:00" % text)
    day = now - now % 86400
    at = day + hours * 3600 + minutes * 60
    return at if at > now else at + 86400


def commit_of(path, given):
    """The commit of the study's copy at ``path``: ``git rev-parse HEAD`` there, else ``given``; exits naming
    --commit when neither."""
    found = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    if found.returncode == 0:
        return found.stdout.strip()
    if given:
        return given + " (given: %s is no git checkout)" % path
    sys.exit("--dlbench %s: not a git checkout; give --commit (e.g. `git get-tar-commit-id < the archive`)" % path)


def suite_unit(study, threads, step, results, warmup, timed):
    """(wall s/step list, [CPU s/step], effective parallelism, image, CPUs) of one suite job of ``study`` (a STUDY
    entry) at ``threads`` (None: the framework's default)."""
    token = study["token"]
    options = RunOptions(
        frameworks=[token],
        variants=[study["variant"]],
        batch_sizes=[BATCH],
        threads=[threads] if threads else None,
        warmup=warmup,
        iterations=timed,
        repeats=1,
        isolation="process",
        steps={token: step} if step != SUITE_STEP else {},
    )
    folder = runs.run(study["spec"], options, results_dir=results, reporter=runs.Silent())
    body = json.loads((folder / "bundle.json").read_text())
    job = next((folder / "jobs").iterdir())
    result = json.loads((job / "result.json").read_text())
    if result["status"] != "ok":
        sys.exit("suite job %s: %s %s" % (job, result["status"], result.get("reason") or result.get("error")))
    cpu = result["cpu_usage"]
    wall = [s for repeat in result["timing"]["repeats"] for s in repeat]
    return (
        wall,
        [cpu["cpu_seconds"] / timed],
        cpu["effective_parallelism"],
        body["images"][0]["tag"],
        result["environment"]["process"]["cpus"],
    )


def peer_unit(framework, threads, copy, image, warmup, timed, variant=None):
    """(wall s/step list, CPU s/step list, edits, wall s/step list in the call that ends a step, [] where the peer
    does not say) of one run of the study's code for ``framework`` (a STUDY key) from its ``copy`` in ``image``, its
    steps warmup+1 to warmup+timed; ``variant``: {args: appended, subs: [[file, old, new]], env: {name: value} added,
    peer: the peer's own options (e.g. --decoded), pin: the container pinned to CPUs 0..threads-1} (STUDY)."""
    study, variant = STUDY[framework], variant or {}
    window = ["--window", str(warmup)] if study.get("window") else []  # one value: steps warmup+1 to warmup+timed
    env = dict(study["env"](threads), **variant.get("env", {}))
    env = [a for name, value in sorted(env.items()) for a in ("-e", "%s=%s" % (name, value))]
    pinned = variant.get("pin") or (threads and study["study"] == "dlf")  # as the suite's job at N threads
    pin = ["--cpuset-cpus", "0-%d" % (threads - 1)] if pinned else []
    command = (
        ["docker", "run", "--rm"]
        + pin
        + env
        + [
            "-v",
            "%s:/study:ro" % Path(copy).resolve(),
            "-v",
            "%s:/bench/peer.py:ro" % PEER,
            image,
            "/opt/venv/bin/python",
            "/bench/peer.py",
            study["peer"] or framework,
            "/study/" + study["script"],
            str(warmup + timed),
            "--subs",
            json.dumps(study["subs"] + variant.get("subs", [])),
        ]
        + variant.get("peer", [])
        + window
        + [
            "--",
        ]
        + study["args"](warmup + timed)
        + variant.get("args", [])
    )
    out = subprocess.run(command, capture_output=True, text=True)
    line = next((line for line in out.stdout.splitlines() if line.startswith("PEER ")), None)
    if out.returncode or line is None:
        sys.exit("peer failed (%d): %s" % (out.returncode, (out.stdout + out.stderr)[-3000:]))
    found = json.loads(line[5:])
    skip = 0 if window else warmup
    return found["wall"][skip:], found["cpu"][skip:], found["edited"], found.get("inside", [])[skip:]


def per_unit(cpu):
    """A unit's CPU seconds per step as one value, the mean over its timed steps: what the suite's job gives (its
    window's CPU seconds / T), so that the two sides' CPU are alike (a median of steps against a mean favours the
    side whose steps are skewed: 1 thread, DLF's MXNet notebook, set 6: CPU 1.068 against a wall of 1.011)."""
    return [float(np.mean(cpu))]


def interval(suite, peer, draws=2000, seed=0):
    """Percentile bootstrap 95% interval of median(suite) / median(peer), the steps of each side resampled."""
    rng = np.random.default_rng(seed)
    suite, peer = np.asarray(suite), np.asarray(peer)
    ratios = [np.median(rng.choice(suite, suite.size)) / np.median(rng.choice(peer, peer.size)) for _ in range(draws)]
    return np.percentile(ratios, [2.5, 97.5])


def table(found, rounds):
    """Print the table of ``found`` ((framework, threads, side) -> {"wall": [...], "cpu": [...]}; side "study", a
    variant of the study's code "P-..." or a suite's way) after ``rounds`` rounds: per framework, thread count and
    side, the study's and that side's median s/step, their ratio and its interval (interval()); each suite's way
    also against each variant (way "WAY vs P-...": the variant in the study's columns)."""
    print("\nafter %d round(s), load average %s" % (rounds, " ".join("%.2f" % v for v in os.getloadavg())))
    print(
        "| framework | threads (0: default) | suite's way (P-*: the study's code less a piece; vs P-*: against it) "
        "| measure | study s/step | suite s/step | ratio suite/study [95% CI] | samples (study + suite) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for (framework, threads, side), values in sorted(found.items()):
        if side == "study":
            continue
        variants = sorted(s for f, t, s in found if (f, t) == (framework, threads) and s.startswith("P-"))
        for reference in ["study"] + ([] if side.startswith("P-") else variants):
            peer = found[(framework, threads, reference)]
            for measure in ("wall", "cpu"):
                low, high = interval(values[measure], peer[measure])
                ratio = np.median(values[measure]) / np.median(peer[measure])
                print(
                    "| %s | %d | %s | %s | %.3f | %.3f | %.3f [%.3f, %.3f] | %d + %d |"
                    % (
                        "%s (%s)" % (framework, STUDY[framework]["token"]),
                        threads,
                        side if reference == "study" else "%s vs %s" % (side, reference),
                        measure,
                        np.median(peer[measure]),
                        np.median(values[measure]),
                        ratio,
                        low,
                        high,
                        len(peer[measure]),
                        len(values[measure]),
                    )
                )
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dlbench", help="a local copy of hclhkbu/dlbench")
    parser.add_argument("--dlf", help="a local copy of ilkarman/DeepLearningFrameworks")
    parser.add_argument("--commit", default="", help="its commit, when PATH is not a git checkout")
    parser.add_argument(
        "--threads",
        default=None,
        help="thread counts, 0 the framework's default (default: DLBench's 1,2; DLF's notebooks 0, as DLF ran them)",
    )
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=8, help="untimed steps before the timed ones (both sides)")
    parser.add_argument("--steps", type=int, default=8, help="timed steps per unit (both sides)")
    parser.add_argument("--results", default=None, help="folder for the suite's bundles (default: a temporary one)")
    parser.add_argument("--frameworks", default=",".join(STUDY), help="of %s" % ", ".join(STUDY))
    parser.add_argument("--deadline", default="", help="HH:MM (UTC, the next such time): no unit starts after it")
    parser.add_argument(
        "--images",
        default="",
        help="FRAMEWORK=TAG,...: the image each framework's study code runs in (default: the one a first suite job, "
        "not counted, builds or finds; a suite job finds its own)",
    )
    parser.add_argument(
        "--variants",
        default=None,
        help="of the study code's variants those to run; default all. MXNet (DLBench's step less one piece): "
        "P-kv (no kvstore), P-mom (no momentum, no weight decay), P-kv-mom (both), P-metric (no 'ce' metric: "
        "waits for the outputs only), P-decoded (NDArrayIter over the records decoded before training), P-dec1 (1 "
        "decoding thread, not 20), P-pin (pinned to N CPUs), P-w1 (1 engine worker; 2 threads and up), P-scale "
        "(inputs scaled by 1/256 after the mean image: the first sigmoid layer unsaturated). Caffe2: "
        "P-omp1, P-passive, P-init. DLF's Keras on CNTK: P-nhwc (the notebook channels-last)",
    )
    args = parser.parse_args()
    frameworks = args.frameworks.split(",")
    copies = {"dlbench": args.dlbench, "dlf": args.dlf}
    for framework in frameworks:
        if framework not in STUDY:
            sys.exit("--frameworks %s: no study code here for it; give some of %s" % (framework, ", ".join(STUDY)))
        study = STUDY[framework]["study"]
        if not copies[study] or not (Path(copies[study]) / STUDY[framework]["script"]).is_file():
            sys.exit(
                "--%s %s: no %s there; give a copy of %s"
                % (
                    study,
                    copies[study] or "(not given)",
                    STUDY[framework]["script"],
                    {"dlbench": "hclhkbu/dlbench", "dlf": "ilkarman/DeepLearningFrameworks"}[study],
                )
            )
        if study == "dlf" and args.threads not in (None, "0") and not STUDY[framework]["threads_by_env"]:
            sys.exit(
                "--threads %s: %s's thread count is set through its framework's API, which DLF's notebook does not "
                "call; give --threads 0 (the default, as DLF ran it), or a notebook of %s"
                % (args.threads, framework, ", ".join(f for f in STUDY if STUDY[f].get("threads_by_env")))
            )
    for study in sorted({STUDY[f]["study"] for f in frameworks}):
        print("%s %s, commit %s" % (study, copies[study], commit_of(copies[study], args.commit)))
    print("load average %s" % " ".join("%.2f" % v for v in os.getloadavg()))
    deadline = deadline_of(args.deadline, time.time()) if args.deadline else None
    results = Path(args.results or tempfile.mkdtemp(prefix="dlrepro-study-parity-"))
    found = {}  # (framework, threads, side) -> {"wall": [...], "cpu": [...]}
    images = dict(pair.split("=", 1) for pair in args.images.split(",") if pair)
    for framework in frameworks:  # builds or finds each image; not counted
        if framework in images:
            print("%s: image %s (given)" % (framework, images[framework]), flush=True)
            continue
        images[framework] = suite_unit(STUDY[framework], 1, SUITE_STEP, results, 1, 1)[3]
        print("%s: image %s (a first suite job, not counted)" % (framework, images[framework]), flush=True)
    for round_ in range(args.rounds):
        for framework in frameworks:
            study = STUDY[framework]
            counts = [int(t) for t in (args.threads or {"dlbench": "1,2", "dlf": "0"}[study["study"]]).split(",")]
            for threads in counts:  # 0: the framework's default
                variants = [
                    name
                    for name, variant in study.get("variants", {}).items()
                    if (args.variants is None or name in args.variants.split(","))
                    and threads >= variant.get("min_threads", 0)
                ]
                ways = variants + list(study["ways"])
                for unit in ["P"] + ways + ways[::-1] + ["P"]:
                    if deadline and time.time() >= deadline:
                        print("deadline %s UTC: no unit starts after it; round %d cut" % (args.deadline, round_ + 1))
                        table(found, round_ + 1)
                        return
                    side = found.setdefault(
                        (framework, threads, unit if unit != "P" else "study"), {"wall": [], "cpu": []}
                    )
                    if unit == "P" or unit in study.get("variants", {}):
                        wall, cpu, edited, inside = peer_unit(
                            framework,
                            threads,
                            copies[study["study"]],
                            images[framework],
                            args.warmup,
                            args.steps,
                            study.get("variants", {}).get(unit),
                        )
                        note = "cpu steps %s; edited: %s" % (" ".join("%.3f" % c for c in cpu), "; ".join(edited))
                        cpu = per_unit(cpu)
                        if inside:  # Torch 7: a step is from one optim.sgd return to the next
                            note += "; outside optim.sgd %s s" % " ".join(
                                "%.4f" % (w - i) for w, i in zip(wall, inside)
                            )
                    else:
                        wall, cpu, parallelism, images[framework], cpus = suite_unit(
                            study, threads, study["ways"][unit], results, args.warmup, args.steps
                        )
                        note = "effective parallelism %.2f, CPUs %s" % (parallelism, cpus or "not confined")
                        if study.get("window"):  # the study's code gives one window a unit: the suite's mean too
                            wall = [float(np.mean(wall))]
                    side["wall"] += wall
                    side["cpu"] += cpu
                    print(
                        "round %d %s t%d %-15s wall %s cpu %.3f  %s; load %.2f"
                        % (
                            round_ + 1,
                            framework,
                            threads,
                            unit,
                            " ".join("%.3f" % w for w in wall),
                            float(np.median(cpu)),
                            note,
                            os.getloadavg()[0],
                        ),
                        flush=True,
                    )
        table(found, round_ + 1)
    print("load average at the end %s; bundles under %s" % (" ".join("%.2f" % v for v in os.getloadavg()), results))


if __name__ == "__main__":
    main()
