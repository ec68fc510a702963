"""Whether DLBench's FCN-S first layer gives subnormal floats in TensorFlow's step, as it does in MXNet's (issue 55;
results/study-parity-20261206/dlbench-mxnet-fcn-s-differences.md: 4% subnormal sigmoid outputs made MXNet 0.12.0's
matrix products 11x slower).

    python benchmarks/study_subnormals.py [--image dlrepro/tensorflow:1.4.0-cpu-HASH] [--threads 1,2]

Runs in the image (``docker run``) the first layer of DLBench's TensorFlow FCN-S as hclhkbu/dlbench @ 978b034
synthetic/experiments/tensorflow/fc/ffn26752.py builds it: features drawn standard normal (createFakeData), weights
and biases uniform in [-0.5, 0.5] (getParameters), sigmoid(x W + b) with x (64, 26752) and W (26752, 2048). Prints,
per intra-op thread count, the pre-activations' standard deviation and how many of the 131,072 sigmoid outputs are
subnormal (nonzero, below float32's smallest normal 1.18e-38) and exactly zero, from TensorFlow and from numpy's
float32 sigmoid of the same pre-activations (numpy does not flush subnormals). No number of DLBench's is used.
"""

import argparse
import os
import subprocess
import sys

INSIDE = r"""
import numpy as np, sys, tensorflow as tf
np.random.seed(0)
tf.set_random_seed(0)
features = np.random.randn(64, 26752)
x = tf.placeholder("float", [None, 26752])
W = tf.get_variable("W0", [26752, 2048], initializer=tf.random_uniform_initializer(-0.5, 0.5))
B = tf.get_variable("B0", [2048], initializer=tf.random_uniform_initializer(-0.5, 0.5))
pre = tf.nn.xw_plus_b(x, W, B)
out = tf.nn.sigmoid(pre)
tiny = np.finfo(np.float32).tiny
subnormal = lambda a: int(np.sum((a != 0) & (np.abs(a) < tiny)))
for threads in [int(t) for t in sys.argv[1].split(",")]:
    with tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=threads)) as session:
        session.run(tf.global_variables_initializer())
        p, h = session.run([pre, out], {x: features})
    with np.errstate(over="ignore"):
        ref = (np.float32(1) / (np.float32(1) + np.exp(-p))).astype(np.float32)
    print("tensorflow %s, %d intra-op threads: pre-activation std %.1f; of %d sigmoid outputs, subnormal: "
          "TensorFlow %d, numpy %d; exactly 0: TensorFlow %d, numpy %d"
          % (tf.__version__, threads, p.std(), h.size, subnormal(h), subnormal(ref), int(np.sum(h == 0)),
             int(np.sum(ref == 0))))
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image", help="a TensorFlow image (default: the newest dlrepro/tensorflow:1.4.0-cpu-*)")
    parser.add_argument("--threads", default="1,2", help="intra-op thread counts, comma-separated")
    args = parser.parse_args(argv)
    tags = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}", "dlrepro/tensorflow"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    image = args.image or next((t for t in tags if t.startswith("dlrepro/tensorflow:1.4.0-cpu-")), None)
    if image is None:
        sys.exit(
            "study_subnormals.py: no dlrepro/tensorflow:1.4.0-cpu-* image here; build it (`dlrepro build "
            "--framework=tensorflow@1.4.0`) or give --image"
        )
    env = {"TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONWARNINGS": "ignore"}
    command = ["docker", "run", "--rm"] + ["-e%s=%s" % kv for kv in env.items()]
    os.execvp("docker", command + [image, "python", "-c", INSIDE, args.threads])


if __name__ == "__main__":
    main()
