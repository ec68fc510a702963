#!/bin/bash
# Issue 55 on one GPU: bash .whl/i55jax/run.sh NAME:SECONDS:ARGS... ; each NAME is a tree (NAME.tgz beside this
# script) unpacked in /tmp/NAME, and benchmarks/jax_fcn_parity.py run there with ARGS (commas for spaces) for at
# most SECONDS.
HERE=$(cd "$(dirname "$0")" && pwd); OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 JAX_COMPILATION_CACHE_DIR=/tmp/jaxcache JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0
echo "checkout: $(git log -1 --format='%h %s' 2>/dev/null | cut -c1-80)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader
python3 -c "import pydantic, yaml" 2>/dev/null || python3 -m pip install -q --no-index --no-deps --no-compile \
  --no-cache-dir --target /tmp/site "$HERE"/whl/*.whl
for item in "$@"; do
  name=${item%%:*}; rest=${item#*:}; limit=${rest%%:*}; args=${rest#*:}; args=${args//,/ }
  echo "=== $name $args $(date -u +%H:%M:%S)"
  mkdir -p /tmp/$name && tar xzf "$HERE/$name.tgz" -C /tmp/$name
  (cd /tmp/$name && PYTHONPATH=/tmp/$name:/tmp/site timeout $limit python3 benchmarks/jax_fcn_parity.py $args --json "$OUT/$name.json" 2>&1 | tee "$OUT/$name.txt")
done
[ -d /tmp/hlo ] && tar czf "$OUT/hlo.tgz" -C /tmp hlo
echo "=== end $(date -u +%H:%M:%S)"
