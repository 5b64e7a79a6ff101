#!/usr/bin/env bash
# Set up the environment like run_all.sh, then run the test suite (without GPU-only tests unless
# a GPU is visible). Extra arguments go to pytest, e.g. ./run_tests.sh -k params -x
# The suite includes one end-to-end `./run_all.sh --profile smoke` (tests/test_notebooks.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"
./run_all.sh --setup-only
if [ -z "${VIRTUAL_ENV:-}" ]; then
    # shellcheck disable=SC1091
    source "${CUDAPERF_VENV:-$ROOT/.venv}/bin/activate"
fi
marks="not gpu"
if nvidia-smi -L 2>/dev/null | grep -q GPU; then marks=""; fi
set +e
python -m pytest -q -ra ${marks:+-m "$marks"} "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then
    echo "run_tests.sh: pytest collected no tests - treating that as a failure" >&2
    exit 1
fi
exit "$rc"
