#!/usr/bin/env bash
# The harness's GPU evidence in one device call (about 9 minutes): the GPU's manifest and
# ceilings (filed into data/ceilings/ for this run when the GPU model has none, so the roofline
# flag works), every gpu-marked test incl. the adversarial suite, then bench_harness.py at a
# reduced size. Everything lands under $OUT. Needs the tree-sitter wheels in .whl/ (README).
#   TEST_S / BENCH_S: time limits; SKIP_BENCH=1: tests only; NT / NL / NR: bench sizes.
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
SLUG=$(python3 -c "from cudaperf import envinfo; print(envinfo.gpu_slug(envinfo.gpus()[0]['name']))")
echo "GPU slug: $SLUG"
python3 -c "
import os; from cudaperf import envinfo
envinfo.write_manifest(envinfo.machine_manifest(), os.path.join('$OUT', 'manifest_$SLUG.json'))"
if [ ! -f "data/ceilings/$SLUG.json" ]; then
  python3 -m cudaperf.ceilings --out "$OUT" 2>&1 | tail -2 && cp "$OUT/$SLUG.json" data/ceilings/
fi
export CUDAPERF_ADV_LOG=$OUT/adversarial_$SLUG.jsonl
# SIGINT at the limit: pytest then still prints what failed so far (SIGTERM loses it all).
timeout -s INT ${TEST_S:-420} python3 -m pytest -q -p no:cacheprovider -m gpu -rA --tb=short --timeout 400 \
  tests/test_harness.py tests/test_adversarial.py tests/test_gpuworker.py tests/test_torchpath.py \
  > "$OUT/gpu_tests_${SLUG}_full.log" 2>&1  # whole log, so a run cut short still says what failed
tail -60 "$OUT/gpu_tests_${SLUG}_full.log" > "$OUT/gpu_tests_$SLUG.log"
tail -8 "$OUT/gpu_tests_$SLUG.log"
[ "${SKIP_BENCH:-0}" = 1 ] && exit 0
timeout ${BENCH_S:-150} python3 benchmarks/bench_harness.py --tasks data/tasks/c2cuda.jsonl.gz --n-throughput ${NT:-120} \
  --n-load-inline ${NL:-6} --n-repeat ${NR:-72} --out "$OUT" 2>&1 | grep -v "it/s\]" | tail -14
ls -la "$OUT"
