#!/bin/bash
# Issue 36 on one H200: what each device call ran, from the checkout's root with $OUT set (local executor, no Docker).
#   bash results/h200-timers-20261203/run.sh STEP...   STEP: probe | jax-before | jax-after | torch | jax-long
# jax-before runs the same benchmark scripts over the runner as it was before the issue (5289499), copied to
# ../wt36-before (runner/ from `git archive 5289499 runner`, the rest from this tree). Wheels the machine lacks
# (pydantic for the job expansion) come from ../whl. XLA's persistent cache lets the later steps reuse compilations.
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 JAX_COMPILATION_CACHE_DIR=/tmp/jaxcache JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0
[ -d /tmp/site ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site ../whl/*.whl
HERE=$PWD
for step in "$@"; do
  echo "=== $step $(date -u +%H:%M:%S)"
  case $step in
    probe)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader
      python3 -c 'import jax, torch; print("jax", jax.__version__, jax.devices(), "torch", torch.__version__)'
      PYTHONPATH=/tmp/site:$HERE timeout 120 python3 results/h200-timers-20261203/jax_clock_check.py "$OUT/jax-clock.json" ;;
    jax-before)
      (cd ../wt36-before && PYTHONPATH=/tmp/site:$PWD timeout 250 python3 benchmarks/overhead.py --framework jax \
        --seconds 5 --profile --json "$OUT/jax-before.json") ;;
    jax-after)
      PYTHONPATH=/tmp/site:$HERE timeout 360 python3 benchmarks/overhead.py --framework jax --seconds 8 --profile \
        --timers pipelined_wall,host_sync --json "$OUT/jax-after.json" ;;
    jax-long)  # blocks of 40 iterations (the bare loop's one refill of the launch queue weighs half as much), and
      # the LSTM, which jax-before and jax-after did not reach in their time
      PYTHONPATH=/tmp/site:$HERE timeout 170 python3 benchmarks/overhead.py --framework jax --seconds 8 \
        --iterations 40 --timers pipelined_wall --cases "FCN-S b32,LSTM" --json "$OUT/jax-long.json" ;;
    torch)
      PYTHONPATH=/tmp/site:$HERE timeout 170 python3 benchmarks/overhead.py --framework torch --seconds 10 \
        --json "$OUT/torch.json" ;;
  esac
done
