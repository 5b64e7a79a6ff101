#!/usr/bin/env bash
# Reproduce the artifact: set up the Python environment (once), then run notebooks/NN_*.ipynb in
# order with papermill. All run logic lives in cudaperf/runall.py; this script only bootstraps.
#
#   ./run_all.sh                         default profile (mini with a GPU, smoke without)
#   ./run_all.sh --profile smoke         any CPU machine, minutes
#   ./run_all.sh --only 03 --from 05 -p name value ...   see: ./run_all.sh --help
#   ./run_all.sh --setup-only            only create/update the environment
#
# Environment: uses the active virtualenv if there is one, else creates ./.venv. Installs
# torch==2.13.0 first on machines without a GPU (a CPU build where the index has one), then
# `pip install -c constraints-cpu.txt -e '.[dev]'` ('.[dev,gpu]' with a GPU, keeping the
# machine's own torch). A stamp keyed by the hash of pyproject.toml + constraints-cpu.txt skips
# the install when nothing changed. CUDAPERF_TORCH overrides the torch requirement.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"

log() { echo "run_all.sh: $*" >&2; }

has_gpu() { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q GPU; }

# The oldest Python every pin in constraints-cpu.txt supports (soupsieve 4.1 needs 3.11.5; the
# pins were frozen with 3.11.7). An older interpreter makes pip backtrack for many minutes.
MIN_PY="3.11.5"

py_ok() {  # py_ok PYTHON: true if it exists, is new enough and has venv
    [ -n "$1" ] && command -v "$1" >/dev/null 2>&1 || return 1
    "$1" -c "import sys, venv; sys.exit(sys.version_info < tuple(map(int, '$MIN_PY'.split('.'))))" 2>/dev/null
}

pick_python() {
    local c
    for c in "${PYTHON:-}" python3 python3.13 python3.12 python3.11 "$HOME"/.pyenv/versions/3.1[1-9]*/bin/python3; do
        if py_ok "$c"; then echo "$c"; return 0; fi
    done
    log "no Python >= $MIN_PY with venv found (tried \$PYTHON, python3, python3.1x, pyenv);"
    log "set PYTHON=/path/to/python3 (>= $MIN_PY) or activate a suitable virtualenv"
    return 1
}

bootstrap() {
    if [ -z "${VIRTUAL_ENV:-}" ]; then
        local venv="${CUDAPERF_VENV:-$ROOT/.venv}"
        if [ ! -x "$venv/bin/python" ]; then
            local py
            py="$(pick_python)"
            log "creating virtual environment $venv with $py ($("$py" --version 2>&1))"
            "$py" -m venv "$venv"
        fi
        # shellcheck disable=SC1091
        source "$venv/bin/activate"
    fi
    if ! py_ok python; then
        log "$(python --version 2>&1) in $VIRTUAL_ENV is older than $MIN_PY, which the pins need;"
        log "remove that environment (or set CUDAPERF_VENV) and set PYTHON to a newer interpreter"
        return 1
    fi
    local gpu=0
    has_gpu && gpu=1
    local key
    key="$(cat pyproject.toml constraints-cpu.txt | sha256sum | cut -c1-16)-gpu$gpu"
    local stamp="$VIRTUAL_ENV/.cudaperf-installed-$key"
    if [ -f "$stamp" ] && python -c "import cudaperf, papermill" 2>/dev/null; then
        return 0
    fi
    log "installing into $VIRTUAL_ENV (gpu=$gpu); this takes a few minutes the first time"
    python -m pip install --quiet --upgrade pip
    local cons="$ROOT/constraints-cpu.txt" extras="dev"
    if [ "$gpu" = 1 ]; then
        # Keep the CUDA build of torch the GPU machine has; pin everything else the same way.
        cons="$(mktemp)"
        grep -v '^torch==' "$ROOT/constraints-cpu.txt" > "$cons"
        extras="dev,gpu"
        python -c "import torch" 2>/dev/null || python -m pip install --quiet "${CUDAPERF_TORCH:-torch>=2.6}"
    else
        python -m pip install --quiet "${CUDAPERF_TORCH:-torch==2.13.0}"
    fi
    # Exact pins as requirements first: a pin this machine cannot get fails here at once, where
    # as a mere constraint it would send pip's resolver backtracking through torch builds.
    python -m pip install --quiet -r "$cons"
    python -m pip install --quiet -c "$cons" -e ".[$extras]"
    python -m ipykernel install --sys-prefix --name python3 >/dev/null
    rm -f "$VIRTUAL_ENV"/.cudaperf-installed-*
    touch "$stamp"
    log "environment ready"
}

if [ "${1:-}" = "--setup-only" ]; then
    bootstrap
    exit 0
fi
bootstrap
exec python -m cudaperf.runall "$@"
