#!/usr/bin/env bash
# Dataset verification in one device call, resuming where the committed shards stop: copies
# data/measurements/c2cuda_*.parquet into $OUT, then measures what is still pending of each shard
# in $SHARDS (of $OF) within one overall budget of $BUDGET_S seconds, and leaves the updated shard
# files and logs in $OUT; copy them back into data/measurements/ and commit.
#   SHARDS="1 2" OF=4 BUDGET_S=520 bash benchmarks/gpu_verify.sh      (SHARD=k works too)
#   SAMPLE=3000 BUDGET_S=520 bash benchmarks/gpu_verify.sh             (the profiled sample instead)
# A shard starts only with MIN_SHARD_S (240) seconds left. GPUS="0" / "0,1": the harness GPUs
# (default all visible); on a two-GPU machine, one shard with GPUS=0 and one with GPUS=0,1 give the
# pool's variants/min over one GPU against two (issue 10). TRUSTED=1 (default): verify_dataset.py
# --trusted (no recheck after timing, one input seed per test: half the perf-size references).
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
# verify NAME ARCHIVE ARGS...: one verify_dataset.py run with the time left, logs named NAME,
# libraries from ARCHIVE when it was carried. SIGABRT at the hard limit makes faulthandler print
# every thread's stack: a hang explains itself.
verify() {
  local name=$1 archive=$2; shift 2
  local left=$(( END - SECONDS )) pre=()
  [ -f "$archive" ] && pre=(--prebuilt "$archive")
  timeout -s ABRT $(( left + 60 )) python3 -X faulthandler benchmarks/verify_dataset.py "$@" \
    --out-dir "$OUT" --max-seconds "$left" --workers-per-gpu "${WORKERS:-12}" --prepare-tasks "${PREP:-40}" \
    ${GPUS:+--gpus "$GPUS"} $([ "${TRUSTED:-1}" = 1 ] && echo --trusted) \
    ${pre[@]+"${pre[@]}"} --sample-stacks "$OUT/stacks_$name.txt" > "$OUT/verify_$name.log" 2>&1
  echo "== $name"; grep -v "it/s\]" "$OUT/verify_$name.log" | tail -14 | cut -c1-700
}
if [ -n "${SAMPLE:-}" ]; then
  # The profiled sample (profile_dataset.py --max-variants $SAMPLE): its tasks from every shard,
  # libraries from the archive built for profiling (same nvcc, same flags).
  verify sample ".prebuilt/profile_sample${SAMPLE}.tar.gz" --sample "$SAMPLE"
  exit 0
fi
for K in ${SHARDS:-${SHARD:-0}}; do
  LEFT=$(( END - SECONDS ))
  # A shard's first groups start before any has finished (nothing to estimate from yet): start a
  # shard only when that much is left, or the hard limit kills them and their work is lost.
  if [ "$LEFT" -lt "${MIN_SHARD_S:-240}" ]; then echo "gpu_verify.sh: ${LEFT}s left, not starting shard $K"; break; fi
  verify "shard$K" ".prebuilt/c2cuda_shard${K}of${OF}.tar.gz" --shard "$K" --of "$OF"
done
