#!/usr/bin/env bash
# Issue 10's evidence on a machine with two GPUs (device kind nvidia-h200-x2), one part per device
# call (each fits 10 minutes); everything lands in $OUT. Carry .whl (trl, datasets, lightgbm, ...).
#   PART=noise  GRPO (mini, M policy) trains on GPU 0 with its rewards on GPU 1 (grpo.eval_gpus'
#               'auto'), while timing_noise.py times 100 reference variants on GPU 1: idle, during
#               training, idle again (CV and median shift against idle).
#   PART=multi  accelerate launch of two ranks (one per GPU), two GRPO steps; each rank reports
#               its weight change (benchmarks/grpo_multi.py --check).
#   PART=pool   the evaluation pool over GPUS_SET ("0" in one call, "0,1" in the next): dataset
#               verification of shard SHARD (of 4) for 520 s (gpu_verify.sh; variants/min in its log;
#               about 2,000 variants with one GPU at the 213/min measured on one H200). Carry
#               .prebuilt/c2cuda_shard<SHARD>of4.tar.gz; use a different shard in each call (the rows
#               count for the dataset too).
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee "$OUT/gpus.txt"
case "${PART:-noise}" in
  noise)
    timeout -s INT 560 python3 benchmarks/timing_noise.py --eval-gpus 1 --n 100 --settle-s "${SETTLE_S:-90}" \
      --during "python3 benchmarks/grpo_gpu.py train --run ${RUN:-mini-M-both} --budget-s ${TRAIN_S:-330}" \
      --out "$OUT" 2>&1 | grep -v "it/s\]" | tail -8
    cp -r data/grpo/"${RUN:-mini-M-both}" "$OUT/grpo_run" 2>/dev/null || true ;;
  multi)
    timeout -s INT 540 accelerate launch --num_processes 2 benchmarks/grpo_multi.py --profile mini --steps 2 \
      --out "$OUT/multi" --check 2>&1 | grep -v "it/s\]" | tail -8 ;;
  pool)
    SHARDS="${SHARD:-2}" GPUS="${GPUS_SET:-0}" BUDGET_S=520 bash benchmarks/gpu_verify.sh
    for f in "$OUT"/verify_shard*.log; do mv "$f" "${f%.log}_gpus${GPUS_SET:-0}.log"; done ;;
  *) echo "PART must be noise, multi or pool" >&2; exit 2 ;;
esac
ls -la "$OUT"
