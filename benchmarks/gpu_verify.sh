#!/usr/bin/env bash
# One device call of dataset verification that resumes where the committed shards stop: copies
# data/measurements/c2cuda_*.parquet into $OUT, measures what is still pending of shard $SHARD
# of $OF within $BUDGET_S seconds, and leaves the updated shard files (and the log) in $OUT; copy them
# back into data/measurements/ and commit.   SHARD=1 OF=4 BUDGET_S=520 bash benchmarks/gpu_verify.sh
# A task's variants share one runner (verify_dataset's default); CHUNK variants per chunk (128:
# about 40 tasks, so 12 runners stay busy across a chunk).
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
cp data/measurements/c2cuda_*.parquet "$OUT"/ 2>/dev/null || true
# Libraries of this shard built ahead on the CPU machine (same nvcc), if carried:
#   python -m cudaperf.prebuilt pack --shard K --of N --out .prebuilt/c2cuda_shardKofN.tar.gz
PREBUILT=${PREBUILT:-.prebuilt/c2cuda_shard${SHARD:-0}of${OF:-4}.tar.gz}
PRE=(); [ -f "$PREBUILT" ] && PRE=(--prebuilt "$PREBUILT")
# SIGABRT at the hard limit makes faulthandler print every thread's stack: a hang explains itself.
timeout -s ABRT $(( ${BUDGET_S:-520} + 60 )) python3 -X faulthandler benchmarks/verify_dataset.py \
  --shard "${SHARD:-0}" --of "${OF:-4}" --out-dir "$OUT" --max-seconds "${BUDGET_S:-520}" \
  --workers-per-gpu "${WORKERS:-12}" --chunk-variants "${CHUNK:-128}" ${PRE[@]+"${PRE[@]}"} > "$OUT/verify_shard${SHARD:-0}.log" 2>&1
tail -14 "$OUT/verify_shard${SHARD:-0}.log" | cut -c1-700
