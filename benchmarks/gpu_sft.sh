#!/usr/bin/env bash
# SFT warm start of the S, M and L policies in ONE device call: they are small (about 2M / 8M /
# 25M parameters), so the three train side by side on one H200, each with its own wall-clock
# budget. Checkpoints and logs land in $OUT (copy $OUT/models/sft-<size>/ to data/models/).
#   BUDGET_S=420 SIZES="S M L" bash benchmarks/gpu_sft.sh      (carry .whl: trl, datasets, ...)
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
BUDGET_S=${BUDGET_S:-420}
SIZES=${SIZES:-S M L}
for s in $SIZES; do
  # SIGABRT at the hard limit makes faulthandler print every thread's stack.
  timeout -s ABRT $(( BUDGET_S + 120 )) python3 -X faulthandler benchmarks/sft_gpu.py train --size "$s" \
    --budget-s "$BUDGET_S" --out "$OUT/models/sft-$s" > "$OUT/sft_$s.log" 2>&1 &
done
wait
for s in $SIZES; do echo "== $s"; grep -v "it/s\]" "$OUT/sft_$s.log" | tail -5 | cut -c1-400; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1
