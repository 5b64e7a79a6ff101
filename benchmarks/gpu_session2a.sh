#!/usr/bin/env bash
# H200 session 2a: every gpu-marked test (harness, runner, features, adversarial suite).
# Writes logs under $OUT. Needs the tree-sitter wheels carried in .whl/.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=$PWD:/tmp/site
fi
export CUDAPERF_ADV_LOG=$OUT/adversarial_h200.jsonl
timeout 500 python3 -m pytest -q -p no:cacheprovider -m gpu -rA tests/ 2>&1 | tail -60 | tee "$OUT/gpu_tests.log"
