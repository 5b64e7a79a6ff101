#!/usr/bin/env bash
# SFT warm start of the S, M and L policies and their base-policy evaluation, in one device call.
# The three models are small (about 2M / 8M / 25M parameters): they train side by side on one
# H200, each with its own wall-clock budget, then sample side by side (every model x split), and
# then ONE harness per split evaluates every model's samples (tasks prepared once; no timing
# overlaps sampling). Checkpoints go to $MODELS (default runs/models, git-ignored; it stays on
# the device machine between calls while the machine is warm, so TRAIN=0 reuses them).
#   BUDGET_S=140 EPOCHS=1 EVAL_TASKS=48 SPLITS="test infamily seen" TEMP=0.8 bash benchmarks/gpu_sft.sh
# The device returns at most 8 files of at most 16 MiB each (64 MiB in all), so $OUT gets
# sft_results.tar.gz (logs, train_log.json, samples, eval parquet and summaries of every model)
# and each model in $PACK as model_<size>.tar.part-aa, -ab, ... (14 MiB pieces; restore with
# `cat model_M.tar.part-* | tar x`). L (49 MB) does not fit beside S and M: PACK="L" alone.
# Carry .whl (trl, datasets, tree-sitter).
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
BUDGET_S=${BUDGET_S:-140}
EPOCHS=${EPOCHS:-1}
RENAMES=${RENAMES:--1}   # renamed copies of each train task in SFT (-1: the mini profile's sft_renames)
REFINE=${REFINE:--1}     # refinement transcripts in SFT: 1 / 0 (-1: the mini profile's sft_refine)
COPIES=${COPIES:--1}     # identity-copy records per train task (policy.copy_examples; -1: the profile's)
SIZES=${SIZES:-S M L}
TRAIN=${TRAIN:-1}
SPLITS=${SPLITS-test infamily seen}  # "" = no evaluation
EVAL_TASKS=${EVAL_TASKS:-48}
MAX_NEW=${MAX_NEW:-1024}
TEMP=${TEMP:-0.8}      # sampling temperature of the evaluation (0 = greedy)
SAMPLE_S=${SAMPLE_S:-140}
EVAL_S=${EVAL_S:-100}
PACK=${PACK-S M}  # "" = no checkpoint returned
MODELS=${MODELS:-runs/models}
mkdir -p "$MODELS"
if [ "$TRAIN" = 1 ]; then
  for s in $SIZES; do
    # SIGABRT at the hard limit makes faulthandler print every thread's stack.
    timeout -s ABRT $(( BUDGET_S + 60 )) python3 -X faulthandler benchmarks/sft_gpu.py train --size "$s" \
      --budget-s "$BUDGET_S" --epochs "$EPOCHS" --renames "$RENAMES" --refine "$REFINE" --copies "$COPIES" --models "$MODELS" > "$MODELS/sft_$s.log" 2>&1 &
  done
  wait
  for s in $SIZES; do echo "== train $s"; grep "sft_gpu\|eval_[a-z]*_*loss" "$MODELS/sft_$s.log" | tail -5 | cut -c1-300; done
fi
if [ -n "$SPLITS" ]; then
  for s in $SIZES; do for sp in $SPLITS; do
    timeout -s ABRT "$SAMPLE_S" python3 -X faulthandler benchmarks/sft_gpu.py sample --size "$s" --models "$MODELS" \
      --split "$sp" --eval-tasks "$EVAL_TASKS" --max-new-tokens "$MAX_NEW" --temperature "$TEMP" > "$MODELS/sample_${s}_$sp.log" 2>&1 &
  done; done
  wait
  grep -h "sft_gpu" "$MODELS"/sample_*.log | cut -c1-200
  # One evaluation at a time: each times kernels on the GPU, which must be otherwise idle.
  for sp in $SPLITS; do
    timeout -s ABRT "$EVAL_S" python3 -X faulthandler benchmarks/sft_gpu.py eval --size $SIZES --models "$MODELS" \
      --split "$sp" --eval-tasks "$EVAL_TASKS" --max-new-tokens "$MAX_NEW" > "$MODELS/eval_$sp.log" 2>&1
    echo "== eval $sp rc=$?"; grep "sft_gpu" "$MODELS/eval_$sp.log" | tail -4 | cut -c1-700
  done
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$MODELS/gpu.txt" 2>&1
python3 -c "import torch, transformers, trl; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__, 'trl', trl.__version__)" >> "$MODELS/gpu.txt" 2>&1
echo "BUDGET_S=$BUDGET_S EPOCHS=$EPOCHS RENAMES=$RENAMES REFINE=$REFINE COPIES=$COPIES SIZES=$SIZES SPLITS=$SPLITS EVAL_TASKS=$EVAL_TASKS MAX_NEW=$MAX_NEW TEMP=$TEMP bash benchmarks/gpu_sft.sh (commit ${CUDAPERF_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)})" >> "$MODELS/gpu.txt"
(cd "$MODELS" && tar czf "$OUT/sft_results.tar.gz" --exclude='*.safetensors' --exclude='tokenizer.json' .)
for s in $PACK; do
  [ -d "$MODELS/sft-$s" ] && tar cf - -C "$MODELS" --exclude='samples_*' --exclude='eval*' "sft-$s" | split -b 14M - "$OUT/model_$s.tar.part-"
done
ls -la "$OUT"
