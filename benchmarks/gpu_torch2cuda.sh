#!/usr/bin/env bash
# torch2cuda on the GPU in one device call: the torchtasks gpu tests (TEST_S, 0 = skip), then
# `python -m cudaperf.torchtasks.verify` resuming from the committed rows for the time left of
# BUDGET_S (a hard limit kills what still runs, so nothing outlives the call's budget), then
# (KB_S > 0) the KernelBench self-check on level 1, its KB_S seconds taken out of BUDGET_S (the verify
# gets BUDGET_S - KB_S and starts only with 150 s of it left: session 28's BUDGET_S=220 KB_S=140 skipped it). Carry .whl, .prebuilt/torch2cuda.tar.gz and,
# for the self-check, .prebuilt/kernelbench_l1_l3.jsonl. PREBUILT names another archive, e.g. one packed
# with `prebuilt pack --skip-done` for only the tasks not yet measured (smaller, installs faster). Copy $OUT/torch2cuda_<gpu>.jsonl to
# data/measurements/ and the logs to data/bench/.
#   BUDGET_S=520 PROCS=12 TEST_S=120 KB_S=0 bash benchmarks/gpu_torch2cuda.sh
#   Copy the rows back BEFORE the next call, even on a machine still warm: each call's tree is yours,
#   so the device's data/measurements/ file is replaced and the same tasks are measured again
#   (session 14 measured 107 tasks twice that way; the pair became a repeatability check).
#   KB_WORKERS / KB_CHUNK: the self-check's runner threads and problems per round; it resumes from the committed
#   data/bench/kernelbench_selfcheck_<gpu>.jsonl (copy $OUT's file back there) and skips the problems
#   any other GPU's file there holds.
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
END=$(( SECONDS + ${BUDGET_S:-520} ))
SLUG=$(python3 -c "from cudaperf import envinfo; print(envinfo.gpu_slug(envinfo.gpus()[0]['name']))")
ROWS="$OUT/torch2cuda_$SLUG.jsonl"
cp "data/measurements/torch2cuda_$SLUG.jsonl" "$ROWS" 2>/dev/null || true
if [ "${TEST_S:-120}" -gt 0 ]; then
  timeout -s INT "${TEST_S:-120}" python3 -m pytest -q -p no:cacheprovider -m gpu -rA --tb=short \
    tests/test_torchtasks.py > "$OUT/gpu_tests_${SLUG}_torchtasks_full.log" 2>&1
  echo "== torchtasks gpu tests"; tail -4 "$OUT/gpu_tests_${SLUG}_torchtasks_full.log" | cut -c1-300
fi
KB=${KB_S:-0}
LEFT=$(( END - SECONDS - KB ))
# verify stops starting tasks at LEFT - 90 and kills what still runs at LEFT - 20, both counted
# from its own start (a fresh machine's prebuilt install comes out of them), before this timeout
# a missing archive (a new checkout has none) is not fatal: the device then compiles the variants itself
PB=${PREBUILT-.prebuilt/torch2cuda.tar.gz}
if [ -n "$PB" ] && [ ! -f "$PB" ]; then echo "== no archive $PB: the GPU machine compiles the variants"; PB=""; fi
if [ "$LEFT" -ge 150 ]; then
  timeout -s INT "$LEFT" python3 -m cudaperf.torchtasks.verify --procs "${PROCS:-12}" \
    --prebuilt "$PB" --skip-done data/measurements/torch2cuda_*.jsonl --max-seconds $(( LEFT - 90 )) --hard-seconds $(( LEFT - 20 )) \
    --out "$ROWS" > "$OUT/torch2cuda_verify.log" 2>&1
  echo "== verify"; grep -v "it/s\]\|warn" "$OUT/torch2cuda_verify.log" | tail -4 | cut -c1-300
else
  echo "== verify skipped: ${LEFT}s left for it"
fi
if [ "$KB" -gt 0 ] && [ -f .prebuilt/kernelbench_l1_l3.jsonl ]; then
  # resume from the committed rows: the self-check skips the problems already there, except where the
  # problem's own Model crashed (a harness fault, e.g. session 28's memory watchdog on 4 GiB outputs)
  cp "data/bench/kernelbench_selfcheck_$SLUG.jsonl" "$OUT/kernelbench_selfcheck_$SLUG.jsonl" 2>/dev/null || true
  timeout -s INT "$KB" python3 benchmarks/kernelbench_selfcheck.py --source .prebuilt/kernelbench_l1_l3.jsonl \
    --levels 1 --out "$OUT/kernelbench_selfcheck_$SLUG.jsonl" --skip-done data/bench/kernelbench_selfcheck_*.jsonl \
    --retry-harness-failures \
    --max-seconds $(( KB - 40 )) \
    --workers-per-gpu "${KB_WORKERS:-8}" --chunk "${KB_CHUNK:-4}" > "$OUT/kb_selfcheck.log" 2>&1
  echo "== KernelBench self-check"; grep -v "it/s\]" "$OUT/kb_selfcheck.log" | tail -12 | cut -c1-300
fi
python3 - "$ROWS" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ok = [r for r in rows if "error" not in r]
bad = [(r["task_id"], v) for r in ok for v, x in r["variants"].items() if not x.get("correct")]
print(f"{len(ok)} tasks measured, {len(rows) - len(ok)} error rows, {len(bad)} variants not correct: {bad[:10]}")
EOF
