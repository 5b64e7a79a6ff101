#!/usr/bin/env bash
# Dataset verification in one device call, resuming where the committed shards stop: copies
# data/measurements/c2cuda_*.parquet into $OUT, then measures what is still pending of each shard
# in $SHARDS (of $OF) within one overall budget of $BUDGET_S seconds, and leaves the updated shard
# files and logs in $OUT; copy them back into data/measurements/ and commit.
#   SHARDS="1 2" OF=4 BUDGET_S=520 bash benchmarks/gpu_verify.sh      (SHARD=k works too)
#   SAMPLE=3000 BUDGET_S=520 bash benchmarks/gpu_verify.sh             (the profiled sample instead)
# A shard starts only with MIN_SHARD_S (240) seconds left.
# Each shard is walked in the stratified order (verify_dataset --order): a shard cut short still
# covers every family, and the profiled sample comes first.
# A task's variants share one runner (verify_dataset's default) and groups stream: one starts
# whenever a runner slot frees (WORKERS per GPU); references are made PREP tasks ahead. A
# shard's libraries built ahead on the CPU machine (same nvcc) are installed first when carried:
#   python -m cudaperf.prebuilt pack --shard K --of N --out .prebuilt/c2cuda_shardKofN.tar.gz
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
cp data/measurements/c2cuda_*.parquet "$OUT"/ 2>/dev/null || true
df -h /dev/shm /tmp | tail -2; free -g | head -2
OF=${OF:-4}
END=$(( SECONDS + ${BUDGET_S:-520} ))
if [ -n "${SAMPLE:-}" ]; then
  # The profiled sample (profile_dataset.py --max-variants $SAMPLE): its tasks from every shard,
  # libraries from the archive built for profiling (same nvcc, same flags).
  PRE=(); [ -f ".prebuilt/profile_sample${SAMPLE}.tar.gz" ] && PRE=(--prebuilt ".prebuilt/profile_sample${SAMPLE}.tar.gz")
  LEFT=$(( END - SECONDS ))
  timeout -s ABRT $(( LEFT + 60 )) python3 -X faulthandler benchmarks/verify_dataset.py --sample "$SAMPLE" \
    --out-dir "$OUT" --max-seconds "$LEFT" --workers-per-gpu "${WORKERS:-12}" --prepare-tasks "${PREP:-40}" \
    ${PRE[@]+"${PRE[@]}"} --sample-stacks "$OUT/stacks_sample.txt" > "$OUT/verify_sample.log" 2>&1
  echo "== sample $SAMPLE"; grep -v "it/s\]" "$OUT/verify_sample.log" | tail -14 | cut -c1-700
  exit 0
fi
for K in ${SHARDS:-${SHARD:-0}}; do
  LEFT=$(( END - SECONDS ))
  # A shard's first groups start before any has finished (nothing to estimate from yet): start a
  # shard only when that much is left, or the hard limit kills them and their work is lost.
  if [ "$LEFT" -lt "${MIN_SHARD_S:-240}" ]; then echo "gpu_verify.sh: ${LEFT}s left, not starting shard $K"; break; fi
  PREBUILT=.prebuilt/c2cuda_shard${K}of${OF}.tar.gz
  PRE=(); [ -f "$PREBUILT" ] && PRE=(--prebuilt "$PREBUILT")
  # SIGABRT at the hard limit makes faulthandler print every thread's stack: a hang explains itself.
  timeout -s ABRT $(( LEFT + 60 )) python3 -X faulthandler benchmarks/verify_dataset.py \
    --shard "$K" --of "$OF" --out-dir "$OUT" --max-seconds "$LEFT" \
    --workers-per-gpu "${WORKERS:-12}" --prepare-tasks "${PREP:-40}" ${PRE[@]+"${PRE[@]}"} \
    --sample-stacks "$OUT/stacks_shard$K.txt" \
    > "$OUT/verify_shard$K.log" 2>&1
  echo "== shard $K"; grep -v "it/s\]" "$OUT/verify_shard$K.log" | tail -14 | cut -c1-700
done
