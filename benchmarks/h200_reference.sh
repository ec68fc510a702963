#!/bin/bash
# How the H200 reference bundles and overhead figures were made (local executor; no Docker there).
#   bash benchmarks/h200_reference.sh check|overhead|overhead-3|overhead-lstm|overhead-jax|torch|jax|alexnet|isolation|study-worker|study-process|ranks|efficiency-torch|efficiency-jax   (outputs under $OUT, or /tmp/out)
# Wheels the machine lacks (invoke, docker SDK, pydantic) travel in .whl and go to /tmp/site.
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if [ -d .whl ] && [ ! -d /tmp/site ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD
R=$OUT/results; mkdir -p "$R"
run() { timeout "$1" python3 -m invoke run --executor local --device cuda --results "$R" "${@:2}" 2>&1 | grep -v "^[│┃┏┡└]" | tail -20
  (cd "$R" && tar cf "$OUT/bundles.tar" .) 2>/dev/null; }
efficiency() {  # framework, then the time limits (s) of AlexNet-S b128, ResNet-50 b64, FCN-S b1024, LSTM b1024
  for p in fp32 bf16; do
    run "$2" --spec=alexnet --framework "$1" --variant alexnet-s --batch-size 128 --precision $p
    run "$3" --spec=resnet50 --framework "$1" --batch-size 64 --precision $p
    run "$4" --spec=fcn --framework "$1" --variant fcn-s --batch-size 1024 --precision $p
    run "$5" --spec=lstm --framework "$1" --variant lstm-synthetic --batch-size 1024 --precision $p
  done; }
for step in "$@"; do
  case $step in
    check)
      python3 --version; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv
      python3 -c 'import torch, pynvml, jax; print(torch.__version__, torch.cuda.get_arch_list(), pynvml.__file__); print(jax.__version__, jax.devices(), getattr(jax.devices()[0], "compute_capability", None))'
      python3 -c 'import invoke, docker, pydantic; print("host side ok", invoke.__version__, pydantic.__version__)' ;;
    archs)  # what the JAX CUDA plugin ships (cubins and PTX), for images/matrix.yaml's table
      d=$(python3 -c 'import jax_plugins.xla_cuda13 as m, os; print(os.path.dirname(m.__file__))')
      for f in "$d"/*.so; do echo "$f"; cuobjdump --list-elf "$f" 2>/dev/null | grep -o 'sm_[0-9]*[a-z]*' | sort | uniq -c
        cuobjdump --list-ptx "$f" 2>/dev/null | grep -o 'sm_[0-9]*[a-z]*' | sort | uniq -c | sed 's/^/ptx /'; done ;;
    overhead-3)  # issue 25's goal: three runs in a row, paired blocks, 15 s of rounds a case (about 2 min a run)
      for i in 1 2 3; do timeout 160 python3 benchmarks/overhead.py --device cuda --seconds 15 --json "$OUT/overhead-$i.json" > "$OUT/overhead-$i.txt" 2>&1
        grep -E "^[A-Z]|farthest" "$OUT/overhead-$i.txt"; done ;;
    overhead)
      timeout 420 python3 benchmarks/overhead.py --device cuda --timers host_sync --json "$OUT/overhead.json" 2>&1 | tee "$OUT/overhead.txt" ;;
    overhead-jax)  # issue 36: JAX's suite against its bare loop (each case compiles its step twice: about 7 min)
      timeout 540 python3 benchmarks/overhead.py --framework jax --device cuda --seconds 8 --iterations 40 \
        --timers pipelined_wall --json "$OUT/overhead-jax.json" 2>&1 | tee "$OUT/overhead-jax.txt" ;;
    overhead-lstm)  # issue 25: the LSTM's suite/bare gap taken apart (events, telemetry, window) and both steps' profiles
      timeout 200 python3 benchmarks/overhead.py --device cuda --cases LSTM --parts --seconds 90 --profile --json "$OUT/overhead-lstm.json" 2>&1 | tee "$OUT/overhead-lstm.txt" ;;
    isolation)  # issue 15: worker vs process isolation, same numbers
      timeout 240 python3 benchmarks/isolation.py --device cuda --executor local --results "$R" 2>&1 | tee "$OUT/isolation.txt" ;;
    study-worker|study-process)  # issue 15: every spec with torch, per-job overhead and the study's wall
      timeout 360 python3 benchmarks/study_overhead.py --run --framework torch --device cuda --executor local \
        --isolation "${step#study-}" --results "$R" 2>&1 | tee "$OUT/$step.txt" ;;
    ranks)  # issue 17: the data-parallel path with one rank (NCCL; JAX shard_map) against the plain job
      timeout 220 python3 benchmarks/ranks_one.py --frameworks "${RANKS_FRAMEWORKS:-torch,jax}" --results "$R" 2>&1 | tee "$OUT/ranks.txt" ;;
    alexnet)  # one job per GPU of --gpus; merged with a CPU bundle by `invoke merge`
      run 240 --spec=alexnet --framework torch --variant alexnet-s --gpus 0 ;;
    torch)
      run 150 --spec=resnet50 --framework torch
      run 150 --spec=fcn --framework torch --variant fcn-s,fcn-8
      run 120 --spec=lstm --framework torch --variant lstm-synthetic
      run 90 --spec=cifar10-vgg --framework torch --variant cifar10-vgg-synthetic
      run 60 --spec=resnet50-features --framework torch ;;
    jax)  # fewer batch sizes than the spec's sweep (each one is an XLA compile): the smallest and largest
      run 80 --spec=alexnet --framework jax --variant alexnet-s --batch-size 16,128
      run 100 --spec=resnet50 --framework jax --batch-size 8,64
      run 70 --spec=fcn --framework jax --variant fcn-s --batch-size 32,1024
      run 70 --spec=lstm --framework jax --variant lstm-synthetic --batch-size 32,1024
      run 50 --spec=cifar10-vgg --framework jax --variant cifar10-vgg-synthetic
      run 30 --spec=resnet50-features --framework jax ;;
    efficiency-torch)  # issue 26: achieved FLOP/s and fraction of peak, the largest batch of each network, fp32 and bf16
      efficiency torch 150 150 120 120 ;;
    efficiency-jax)  # the same; each job compiles its step (XLA). fp32 walls on an H200: 36-59 s; 520 s in all
      efficiency jax 65 65 50 80 ;;
  esac
  (cd "$R" && tar cf "$OUT/bundles.tar" .) 2>/dev/null  # after every step: a later step's time-out loses nothing
done
ls "$R"
