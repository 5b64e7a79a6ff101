# Sourced by the gpu_*.sh scripts on a bare GPU machine: sets OUT and PYTHONPATH, and installs the
# wheels carried with the device call (.whl/: tree-sitter, ninja, trl, datasets, ...; .whl_bnb/:
# bitsandbytes, carried only when needed) into /tmp/site, ahead of the image's packages.
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
for d in .whl .whl_bnb; do
  if ls "$d"/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$d"/*.whl \
      || echo "gpu_env.sh: installing the wheels of $d failed" >&2
  fi
done
if [ -d /tmp/site ]; then export PYTHONPATH=$PWD:/tmp/site PATH=/tmp/site/bin:$PATH; fi
