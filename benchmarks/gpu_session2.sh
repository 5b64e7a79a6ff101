#!/usr/bin/env bash
# H200 session 2 (one call): every gpu-marked test incl. the adversarial suite, then the harness
# benchmark at a reduced size. Logs and JSON under $OUT. Needs the tree-sitter wheels in .whl/.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=$PWD:/tmp/site
fi
export CUDAPERF_ADV_LOG=$OUT/adversarial_h200.jsonl
timeout ${TEST_S:-230} python3 -m pytest -q -p no:cacheprovider -m gpu -rA -x --timeout 200 \
  tests/test_harness.py tests/test_adversarial.py tests/test_gpuworker.py 2>&1 | tail -45 > "$OUT/gpu_tests.log"
tail -8 "$OUT/gpu_tests.log"
[ "${SKIP_BENCH:-0}" = 1 ] && exit 0
python3 -m cudaperf.families build --out /tmp/c2cuda.jsonl.gz | tail -1
timeout ${BENCH_S:-260} python3 benchmarks/bench_harness.py --tasks /tmp/c2cuda.jsonl.gz --n-throughput ${NT:-240} \
  --n-load-inline ${NL:-8} --n-repeat ${NR:-96} --out "$OUT" 2>&1 | grep -v "it/s\]" | tail -12
