#!/bin/bash
# Issue 36 on this 2-CPU machine: suite against bare loop for the seven frameworks in their CPU images (docker
# executor), one framework per process (a process that dies loses one framework), AlexNet-S b8 and FCN-S b32,
# ROUNDS (default 7) paired ABBA rounds of 1 warm-up + 4 measured steps per side. From the checkout's root:
#   [ROUNDS=N] bash results/cpu-overhead-20261203/run.sh NAME [FRAMEWORK...]    (writes results/cpu-overhead-20261203/NAME-*)
DIR=results/cpu-overhead-20261203; NAME=$1; shift
for fw in ${@:-torch tensorflow mxnet jax cntk caffe2 caffe}; do
  { echo "== $fw, $(date -u +%H:%M:%S), load: $(cut -d' ' -f1-3 /proc/loadavg)"
    python -u benchmarks/overhead.py --executor docker --device cpu --frameworks "$fw" --seconds 0 --min-rounds "${ROUNDS:-7}" \
      --warmup 2 --block-warmup 1 --iterations 4 --json "$DIR/$NAME-$fw.json" 2>&1
    echo "rc=$? $(date -u +%H:%M:%S), load: $(cut -d' ' -f1-3 /proc/loadavg)"; } >> "$DIR/$NAME.txt"
done
