#!/usr/bin/env bash
# Mini-profile GRPO on the H200 in ONE device call: a fresh machine keeps nothing from an earlier
# call (session 12 lost its checkpoints that way), so the M policy's SFT start is trained here
# first (SFT_S seconds), then `grpo_gpu.py train` runs from it for GRPO_S seconds (checkpointing
# at the end), then, with EVAL_TASKS > 0, `grpo_gpu.py eval` compares the SFT start and the GRPO
# policy on the held-out split (EVAL_S seconds). Carry .whl (trl, datasets, tree-sitter, lightgbm).
#   RUN=mini-M-both ABLATION=both SFT_S=200 GRPO_S=270 EVAL_TASKS=32 EVAL_S=90 bash benchmarks/gpu_grpo.sh
# SFT_ARGS go to `sft_gpu.py train` (e.g. "--batch-size 128 --lr 3e-3", or "--init runs/models/sft-M" to
# continue a carried checkpoint). With SFT_S=0 no SFT runs and GRPO starts from START (default
# runs/models/sft-M: carry it). EXPORT_SFT=1 puts the SFT start into $OUT as sft-M.tgz.aa, .ab, ...
# (parts <= 15 MB; $OUT returns files of at most 16 MiB): on this machine
#   mkdir -p runs/models && cat <files_at>/sft-M.tgz.* | tar xzf - -C runs/models
# and carry runs/models/sft-M next time instead of training it again (session 14 did so).
# PROBE_TEMPS="0.2 0.5" runs benchmarks/compile_probe.py on the start first (32 tasks x 4 samples per
# temperature, compile only) for each split of PROBE_SPLITS (default "seen": trained-on tasks; add
# "infamily" for the held-out programs of train families): GRPO has a reward signal only where some
# rollouts compile. GRPO_S=0 skips GRPO (an SFT-only call). EVAL_ARGS go to `grpo_gpu.py eval`
# (e.g. "--split infamily --temperature 0.3 --also-steps 20"). EVAL_S: on the H100 in session 22, sampling
# 5 x 64 tasks took 127 s for the SFT start (its longest samples set the pace) and 25 s per GRPO
# checkpoint; session 21 judged 320 samples in 37 s: give 64 tasks with one extra checkpoint ~300 s.
# With EVAL_ARGS "... --start-samples data/models/sft-M-s18/samples_infamily_64x5_T0.5.parquet" (64 infamily tasks x 5
# at T 0.5, the start sft-M-s18) the start is not sampled again. Session 28 (H100), with graph decoding
# (eval's default now): 5 x 64 samples in 8 s, judged in 90 s on a machine that had not prepared those
# tasks and 22 s on one that had; the dynamic cache took 147 s to sample and ran out of EVAL_S=190.
# To continue a GRPO run in a later call, set SFT_S=0: back-to-back calls on a warm machine (idle
# release ~30 s) keep runs/ as long as the call does not carry it, and the next call resumes from the
# checkpoint left there; on a fresh machine, see EXPORT_GRPO below.
# $OUT gets grpo_<run>.tar.gz (data/grpo/<run>: steps.parquet, settings.json, eval*.parquet) and the
# logs (bundled as logs_<run>.tgz at the end of a call that finishes); unpack it into data/grpo/.
set -uo pipefail
source "$(dirname "$0")/gpu_env.sh"
RUN=${RUN:-mini-M-both}
ABLATION=${ABLATION:-both}
SFT_S=${SFT_S:-200}
GRPO_S=${GRPO_S:-270}
STEPS=${STEPS:-0}           # total steps of the run (0: the profile's)
GRPO_ARGS=${GRPO_ARGS:-}   # more `grpo_gpu.py train` options, e.g. "--turns 1 --tasks-per-step 8"
EVAL_TASKS=${EVAL_TASKS:-0}
EVAL_S=${EVAL_S:-90}
SFT_ARGS=${SFT_ARGS:-}
START=${START:-runs/models/sft-M}
EXPORT_SFT=${EXPORT_SFT:-0}
# On a machine kept warm between calls, runs/ (ignored, so left in place) still holds the checkpoint
# and the SFT start, but data/grpo/<run> (not ignored) is replaced by the caller's tree: keep a copy
# of the step log under runs/ and restore it when the caller's tree lacks it, so `train` resumes
# with its log intact.
if [ ! -d "data/grpo/$RUN" ] && [ -d "runs/grpo_data/$RUN" ]; then
  mkdir -p data/grpo && cp -r "runs/grpo_data/$RUN" "data/grpo/$RUN" && echo "== restored data/grpo/$RUN from runs/grpo_data"
fi
# RESUME_TAR: a checkpoint exported by an earlier call (EXPORT_GRPO, below), its parts concatenated
# on this machine into one ignored file and carried, e.g.
#   mkdir -p runs/carry && cat <files_at>/grpo-<run>.txz.* > runs/carry/<run>.tar.xz   (carry runs/carry)
# It is unpacked into runs/grpo/. The run's start_policy (left out of the export) is not copied in by
# hand: `train` saves it again from START in float32, as the run's first call did, and `eval` falls
# back to the run's start_from (session 22's hand-made copy of the float16 sft-M-s18 trained in float16
# and collapsed; grpo._start_policy now loads float32 whatever the folder holds). Resuming this way
# keeps the weights and the step count; Adam's moments start afresh (optimizer.pt stays behind).
if [ -n "${RESUME_TAR:-}" ]; then
  [ -f "$RESUME_TAR" ] || { echo "gpu_grpo.sh: RESUME_TAR=$RESUME_TAR not found (carry it)" >&2; exit 3; }
  mkdir -p runs/grpo && xz -dc "$RESUME_TAR" | tar xf - -C runs/grpo || exit 3
  ls -d runs/grpo/"$RUN"/checkpoint-* >/dev/null 2>&1 \
    || { echo "gpu_grpo.sh: $RESUME_TAR holds no runs/grpo/$RUN/checkpoint-*" >&2; exit 3; }
  echo "== resuming $RUN from $(ls -d runs/grpo/"$RUN"/checkpoint-* | sort -V | tail -1) (fresh Adam moments)"
fi
if [ "$SFT_S" -eq 0 ] && [ ! -f "$START/config.json" ]; then
  # A fresh machine keeps nothing: say so at once instead of training GRPO from a random model.
  echo "gpu_grpo.sh: SFT_S=0 but no start policy at $START (carry it, or set SFT_S)" >&2; exit 3
fi
if [ "$SFT_S" -gt 0 ]; then
  timeout -s ABRT $(( SFT_S + 90 )) python3 -X faulthandler benchmarks/sft_gpu.py train --size M \
    --budget-s "$SFT_S" --epochs 2 --out "$START" $SFT_ARGS > "$OUT/sft_M.log" 2>&1
  echo "== sft M rc=$?"; grep "sft_gpu\|eval_[a-z]*_*loss" "$OUT/sft_M.log" | tail -5 | cut -c1-300
fi
# GEN_SPEED="dynamic:0 dynamic:0:keep static:0 static:256": first time the start policy's generation of a GRPO step's
# batch (16 x 8) per KV-cache configuration (benchmarks/gen_speed.py; GEN_SPEED_S limit, default 240),
# to choose `train --gen-cache/--gen-pad-multiple` (generation was 11-18 s of a 32 s step in session 24).
# GEN_SPEED_ALLOC="expandable_segments:True": the same again with that PyTorch allocator setting (it
# grows segments in place instead of a cudaMalloc per larger block: the growing dynamic KV cache);
# a training call takes it the same way, PYTORCH_CUDA_ALLOC_CONF=... bash benchmarks/gpu_grpo.sh.
gen_speed() {  # gen_speed TAG [VAR=value ...]: one benchmark run, its environment extended by the VARs
  local tag=$1; shift
  env "$@" timeout -s INT "${GEN_SPEED_S:-240}" python3 benchmarks/gen_speed.py --model "$START" --configs $GEN_SPEED \
    --batches "${GEN_SPEED_BATCHES:-3}" --out "$OUT/gen_speed$tag.jsonl" > "$OUT/gen_speed$tag.log" 2>&1
  echo "== gen speed$tag $* rc=$?"; grep '"config"' "$OUT/gen_speed$tag.log" | grep later_mean_s | cut -c1-300
}
if [ -n "${GEN_SPEED:-}" ]; then
  gen_speed ""
  [ -n "${GEN_SPEED_ALLOC:-}" ] && gen_speed _alloc PYTORCH_CUDA_ALLOC_CONF="$GEN_SPEED_ALLOC"
fi
if [ -n "${PROBE_TEMPS:-}" ]; then  # e.g. "0.2 0.5": compile rate of the start per split
  for split in ${PROBE_SPLITS:-seen}; do
    timeout -s ABRT 150 python3 benchmarks/compile_probe.py --model "$START" --split "$split" --tasks 32 --n 4 \
      --temps $PROBE_TEMPS --batch-size 128 >> "$OUT/compile_probe.log" 2>&1
    echo "== compile probe $split rc=$?"
  done
  grep '"temperature"' "$OUT/compile_probe.log" | cut -c1-300
fi
if [ "$EXPORT_SFT" = 1 ] && [ -f "$START/config.json" ]; then
  tar cf - -C "$(dirname "$START")" "$(basename "$START")" | gzip -1 | split -b 15M - "$OUT/$(basename "$START").tgz."
fi
# Snapshot data/grpo/<run> into $OUT every 20 s: a device call cut by its limit returns what is under
# $OUT, so the steps logged so far survive (session 16 lost a cut call's work).
snapshot() { [ -d "data/grpo/$RUN" ] && tar czf "$OUT/.grpo_snap.tgz" -C data/grpo "$RUN" 2>/dev/null \
  && mv "$OUT/.grpo_snap.tgz" "$OUT/grpo_$RUN.tar.gz" \
  && mkdir -p runs/grpo_data && rm -rf "runs/grpo_data/$RUN" && cp -r "data/grpo/$RUN" runs/grpo_data/; }
( while sleep 20; do snapshot; done ) & SNAP_PID=$!
# The trainer stops itself at --budget-s and checkpoints; the hard limit is only for a hang.
if [ "$GRPO_S" -gt 0 ]; then
timeout -s ABRT $(( GRPO_S + 90 )) python3 -X faulthandler benchmarks/grpo_gpu.py train --run "$RUN" \
  --ablation "$ABLATION" --start "$START" --budget-s "$GRPO_S" \
  $( [ "$STEPS" -gt 0 ] && echo --steps "$STEPS" ) ${GRPO_ARGS:-} > "$OUT/grpo_train.log" 2>&1
echo "== grpo train rc=$?"; grep "grpo_gpu" -A8 "$OUT/grpo_train.log" | tail -12 | cut -c1-300
fi
# EXPORT_GRPO=1 (the default; 0 to skip): the newest checkpoint without optimizer.pt (Adam moments: 2x the
# weights, too big to carry back) as grpo-<run>.txz.aa, .ab, ... (xz: the M checkpoint is 33 MB, 30 MB
# packed, and the carried tree is capped at 64 MiB). The run's start_policy is left out (START saved in
# float32). If the next call finds a fresh machine, resume with RESUME_TAR (above). On by default since
# session 21, whose GRPO policy was gone with the machine once the call ended.
if [ "${EXPORT_GRPO:-1}" = 1 ] && ls -d runs/grpo/"$RUN"/checkpoint-* >/dev/null 2>&1; then
  ck=$(ls -d runs/grpo/"$RUN"/checkpoint-* | sort -V | tail -1)
  tar cf - -C runs/grpo --exclude=optimizer.pt "$RUN/$(basename "$ck")" | xz -T0 -6 \
    | split -b 15M - "$OUT/grpo-$RUN.txz."
fi
if [ "$EVAL_TASKS" -gt 0 ]; then
  timeout -s ABRT "$EVAL_S" python3 -X faulthandler benchmarks/grpo_gpu.py eval --run "$RUN" \
    --eval-tasks "$EVAL_TASKS" ${EVAL_ARGS:-} > "$OUT/grpo_eval.log" 2>&1
  echo "== grpo eval rc=$?"; grep "grpo_gpu" "$OUT/grpo_eval.log" | tail -6 | cut -c1-400
  # EVAL_ARGS2: a second evaluation in the same call, e.g. "--split infamily --temperature 0.5 --turns 3"
  # (its files are eval_<split>_t3*.parquet: the one-turn evaluation above stays), EVAL2_S seconds.
  if [ -n "${EVAL_ARGS2:-}" ]; then
    timeout -s ABRT "${EVAL2_S:-$EVAL_S}" python3 -X faulthandler benchmarks/grpo_gpu.py eval --run "$RUN" \
      --eval-tasks "$EVAL_TASKS" $EVAL_ARGS2 > "$OUT/grpo_eval2.log" 2>&1
    echo "== grpo eval 2 rc=$?"; grep "grpo_gpu" "$OUT/grpo_eval2.log" | tail -4 | cut -c1-400
  fi
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt" 2>&1
echo "RUN=$RUN ABLATION=$ABLATION SFT_S=$SFT_S SFT_ARGS=\"$SFT_ARGS\" START=$START GRPO_S=$GRPO_S STEPS=$STEPS GRPO_ARGS=\"$GRPO_ARGS\" EVAL_TASKS=$EVAL_TASKS EVAL_ARGS=\"${EVAL_ARGS:-}\" EVAL_ARGS2=\"${EVAL_ARGS2:-}\" GEN_SPEED=\"${GEN_SPEED:-}\" GEN_SPEED_ALLOC=\"${GEN_SPEED_ALLOC:-}\" PYTORCH_CUDA_ALLOC_CONF=\"${PYTORCH_CUDA_ALLOC_CONF:-}\" PROBE_TEMPS=\"${PROBE_TEMPS:-}\" PROBE_SPLITS=\"${PROBE_SPLITS:-seen}\" bash benchmarks/gpu_grpo.sh (commit ${CUDAPERF_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)})" >> "$OUT/gpu.txt"
kill "$SNAP_PID" 2>/dev/null; wait "$SNAP_PID" 2>/dev/null
snapshot; rm -f "$OUT/.grpo_snap.tgz"
# The logs in one file: $OUT returns at most 8 files, and the model parts take most of them.
( cd "$OUT" && ls ./*.log >/dev/null 2>&1 && tar czf "logs_$RUN.tgz" ./*.log && rm -f ./*.log )
ls -la "$OUT"
