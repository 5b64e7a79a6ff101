"""nvcc into a shared library, sandboxed and cached.

Guarantees:

* `compile_candidate` never hangs and never raises for bad *source*: every outcome (too large,
  compile error, compiler bomb hitting the time/memory limit) is a `CompileResult` with a log.
  nvcc runs under `sandbox.run_limited` (scrubbed env, scratch dir, rlimits, an unprivileged uid
  when root) so that ``#include "/dev/zero"``, template explosions or reading private files
  through ``#include`` are contained.
* The library is built with ``-cudart shared``: the harness process already loads
  libcudart.so and the candidate must share that runtime (one context, one allocator).
* Results are cached under ``<cache_dir>/compile/`` by sha256(source, arch, flags, toolchain);
  failures are cached with their log, timeouts and infrastructure errors are not (they depend
  on machine load, not on the source).
* `resources` holds per-kernel ptxas figures (`parse_ptxas`), demangled where a demangler exists.
* `compile_batch` builds several TRUSTED variants of one task in one translation unit and
  reports each variant's exported symbol (nvcc's fixed cost dominates small builds).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from cudaperf import sandbox

MAX_SOURCE_BYTES = 200_000
MAX_LOG_CHARS = 20_000
DEFAULT_ARCH = "sm_90"
SO_NAME = "cand.so"


@dataclass
class CompileResult:
    ok: bool
    so_path: str | None
    log: str
    resources: dict[str, dict[str, int]] = field(default_factory=dict)
    seconds: float = 0.0
    cached: bool = False
    key: str = ""
    timed_out: bool = False
    built_with: str = ""  # set when the library came from another machine (cudaperf.prebuilt)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- toolchain


@functools.lru_cache(maxsize=1)
def detect_arch() -> str:
    """``sm_XY`` of the first visible GPU (nvidia-smi), else ``sm_90`` (the H200)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return DEFAULT_ARCH
    try:
        out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return DEFAULT_ARCH
    m = re.search(r"(\d+)\.(\d+)", out)
    return f"sm_{m.group(1)}{m.group(2)}" if m else DEFAULT_ARCH


def _version(cmd: Sequence[str]) -> str:
    try:
        return subprocess.run(list(cmd), capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return f"<{cmd[0]} unavailable>"


@functools.lru_cache(maxsize=1)
def toolchain_versions() -> dict[str, str]:
    return {"nvcc": _version(["nvcc", "--version"]), "gcc": _version(["gcc", "--version"])}


@functools.lru_cache(maxsize=1)
def toolchain_id() -> str:
    """Hash of nvcc's and gcc's version text: part of every cache key."""
    v = toolchain_versions()
    return hashlib.sha256((v["nvcc"] + "\n" + v["gcc"]).encode()).hexdigest()[:16]


def cache_key(source: str, arch: str, flags: Sequence[str]) -> str:
    h = hashlib.sha256()
    for part in (source, arch, "\0".join(flags), toolchain_id()):
        h.update(part.encode("utf-8", "surrogateescape"))
        h.update(b"\0\1")
    return h.hexdigest()


# --------------------------------------------------------------------------- ptxas


_RE_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_RE_PROPS = re.compile(r"Function properties for (\S+)")
_RE_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_RE_USED = re.compile(r"Used (\d+) registers")
_RE_BARRIERS = re.compile(r"used (\d+) barriers")
_RE_SMEM = re.compile(r"(\d+) bytes smem")
_RE_CMEM = re.compile(r"(\d+) bytes cmem\[\d+\]")


def _demangle(names: list[str]) -> dict[str, str]:
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    try:
        out = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True, text=True,
                             timeout=30).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return {n: n for n in names}
    if len(out) != len(names):
        return {n: n for n in names}
    return dict(zip(names, (o.strip() or n for o, n in zip(out, names))))


def parse_ptxas(log: str, *, demangle: bool = True) -> dict[str, dict[str, int]]:
    """Per-kernel resources from ``-Xptxas -v`` output (entry functions only).

    Handles both the CUDA <= 12 line (``Used R registers, S bytes smem, C bytes cmem[0]``) and
    CUDA 13's (``Used R registers, used B barriers, S bytes smem``); absent figures are 0.
    """
    kernels: dict[str, dict[str, int]] = {}
    frames: dict[str, tuple[int, int, int]] = {}
    current: str | None = None  # entry function whose "Used" line comes next
    props_for: str | None = None  # function whose "stack frame" line comes next
    for line in log.splitlines():
        if m := _RE_ENTRY.search(line):
            current = m.group(1)
            kernels.setdefault(current, {"registers": 0, "smem_static": 0, "cmem": 0, "stack": 0,
                                         "spill_stores": 0, "spill_loads": 0, "barriers": 0})
            continue
        if m := _RE_PROPS.search(line):
            props_for = m.group(1).strip("'")
            continue
        if (m := _RE_FRAME.search(line)) and props_for:
            frames[props_for] = tuple(int(x) for x in m.groups())  # type: ignore[assignment]
            props_for = None
            continue
        if (m := _RE_USED.search(line)) and current:
            k = kernels[current]
            k["registers"] = int(m.group(1))
            if b := _RE_BARRIERS.search(line):
                k["barriers"] = int(b.group(1))
            if s := _RE_SMEM.search(line):
                k["smem_static"] = int(s.group(1))
            k["cmem"] = sum(int(c) for c in _RE_CMEM.findall(line))
            current = None
    for name, (stack, st, ld) in frames.items():
        if name in kernels:
            kernels[name].update(stack=stack, spill_stores=st, spill_loads=ld)
    if not demangle:
        return kernels
    names = _demangle(list(kernels))
    out: dict[str, dict[str, int]] = {}
    for mangled, res in kernels.items():
        nice = names.get(mangled, mangled)
        out[nice if nice not in out else mangled] = res
    return out


def kernel_base_name(name: str) -> str:
    """``ns::k<4>(int, float*)`` -> ``k``: the name a launch site in the source uses."""
    depth, cut = 0, len(name)
    for i, ch in enumerate(name):  # drop the parameter list (first '(' outside template args)
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "(" and depth == 0:
            cut = i
            break
    base = name[:cut]
    base = re.sub(r"<.*>$", "", base)
    return base.rsplit("::", 1)[-1].strip()


def trim_log(log: str, limit: int = MAX_LOG_CHARS) -> str:
    """Keep head and tail: the first error and ptxas' summary both matter."""
    if len(log) <= limit:
        return log
    half = limit // 2
    return log[:half] + f"\n[... {len(log) - 2 * half} chars cut ...]\n" + log[-half:]


# --------------------------------------------------------------------------- cache


def _cache_paths(cache_dir: str | Path, key: str) -> tuple[Path, Path]:
    d = Path(cache_dir) / "compile" / key[:2]
    return d / f"{key}.json", d / f"{key}.so"


def _load_cached(cache_dir: str | Path, key: str) -> CompileResult | None:
    meta_p, so_p = _cache_paths(cache_dir, key)
    try:
        meta = json.loads(meta_p.read_text())
    except (OSError, ValueError):
        return None
    if meta.get("ok") and not so_p.exists():
        return None
    return CompileResult(ok=bool(meta["ok"]), so_path=str(so_p) if meta["ok"] else None, log=meta["log"],
                         resources=meta.get("resources", {}), seconds=float(meta.get("seconds", 0.0)),
                         cached=True, key=key, timed_out=False, built_with=meta.get("built_with", ""))


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _store(cache_dir: str | Path, res: CompileResult, built_so: Path | None) -> None:
    """Put a compile result (and its library) into the cache under ``res.key``."""
    meta_p, so_p = _cache_paths(cache_dir, res.key)
    if res.ok and built_so is not None:
        so_p.parent.mkdir(parents=True, exist_ok=True)
        tmp = so_p.with_name(f".{so_p.name}.{os.getpid()}.{time.monotonic_ns()}")
        shutil.copyfile(built_so, tmp)
        os.chmod(tmp, 0o755)
        os.replace(tmp, so_p)
        res.so_path = str(so_p)
    meta = {"ok": res.ok, "log": res.log, "resources": res.resources, "seconds": res.seconds}
    if res.built_with:
        meta["built_with"] = res.built_with
    _atomic_write(meta_p, json.dumps(meta).encode())


# --------------------------------------------------------------------------- compile


def nvcc_command(arch: str, flags: Sequence[str], src: str = "cand.cu", out: str = SO_NAME) -> list[str]:
    return ["nvcc", "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared", f"-arch={arch}",
            "-Xptxas", "-v", *flags, "-o", out, src]


def lookup(source: str, *, arch: str = DEFAULT_ARCH, flags: Sequence[str] = ("-O3", "-std=c++17"),
           cache_dir: str | Path = ".cache/cudaperf") -> CompileResult | None:
    """The cached build of `source` (e.g. installed by `cudaperf.prebuilt`), or None; never compiles."""
    return _load_cached(cache_dir, cache_key(source, arch, tuple(flags)))


def compile_candidate(source: str, *, arch: str = DEFAULT_ARCH, flags: Sequence[str] = ("-O3", "-std=c++17"),
                      timeout_s: float = 60, cache_dir: str | Path = ".cache/cudaperf", mem_limit_gb: float = 8,
                      use_cache: bool = True, scratch_base: str | Path | None = None) -> CompileResult:
    """Compile one CUDA translation unit to a shared library (see module docstring)."""
    flags = tuple(flags)
    if arch == "auto":
        arch = detect_arch()
    t0 = time.monotonic()
    raw = source.encode("utf-8", "surrogateescape") if isinstance(source, str) else b""
    if not isinstance(source, str) or not source.strip():
        return CompileResult(ok=False, so_path=None, log="rejected: empty source", key="")
    if len(raw) > MAX_SOURCE_BYTES:
        return CompileResult(ok=False, so_path=None,
                             log=f"rejected: source is {len(raw)} bytes, the limit is {MAX_SOURCE_BYTES}",
                             key="")
    key = cache_key(source, arch, flags)
    if use_cache:
        hit = _load_cached(cache_dir, key)
        if hit is not None:
            return hit
    limits = sandbox.Limits(cpu_s=timeout_s * 2, mem_bytes=int(mem_limit_gb * (1 << 30)),
                            fsize_bytes=512 << 20, nproc=64, nofile=512)
    with sandbox.acquire_uid() as uid, sandbox.scratch(scratch_base, uid=uid) as d:
        (d / "cand.cu").write_bytes(raw)
        if uid is not None:
            os.chown(d / "cand.cu", uid, uid)
        try:
            out = sandbox.run_limited(nvcc_command(arch, flags), cwd=d, timeout_s=timeout_s, limits=limits,
                                      env=sandbox.scrubbed_env(home=str(d)), drop_to_uid=uid)
        except OSError as e:  # nvcc missing: an infrastructure failure, not the source's
            return CompileResult(ok=False, so_path=None, log=f"could not run nvcc: {e}", key=key,
                                 seconds=time.monotonic() - t0)
        log = (out.stdout + ("\n" if out.stdout and out.stderr else "") + out.stderr).strip()
        built = d / SO_NAME
        ok = out.ok and built.is_file() and not built.is_symlink()
        if not out.ok:
            log = trim_log(log) + f"\nnvcc {out.describe()}"
        res = CompileResult(ok=ok, so_path=None, log=trim_log(log), resources=parse_ptxas(log) if ok else {},
                            seconds=time.monotonic() - t0, cached=False, key=key, timed_out=out.timed_out)
        if use_cache and not out.timed_out:
            _store(cache_dir, res, built if ok else None)
        elif ok:  # no cache: keep the library somewhere that outlives the scratch dir
            dest = Path(cache_dir) / "compile" / "nocache" / f"{key}.so"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(built, dest)
            res.so_path = str(dest)
    return res


def compile_many(sources: list[str], *, jobs: int = 0, progress: bool = False, **kw: Any) -> list[CompileResult]:
    """`compile_candidate` over a list with a thread pool (nvcc is the work); order preserved."""
    jobs = jobs or os.cpu_count() or 1
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(sources) or 1))) as ex:
        it = ex.map(lambda s: compile_candidate(s, **kw), sources)
        if progress:
            from tqdm.auto import tqdm

            it = tqdm(it, total=len(sources), desc="nvcc")
        return list(it)


# --------------------------------------------------------------------------- batching

_RE_INCLUDE = re.compile(r"^\s*#\s*include\b.*$")
_RE_IF = re.compile(r"^\s*#\s*if(n?def)?\b")
_RE_ENDIF = re.compile(r"^\s*#\s*endif\b")
_RE_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)")


def variant_symbol(entry: str, name: str) -> str:
    return f"{entry}__{re.sub(r'[^0-9A-Za-z_]', '_', name)}"


def batch_source(named_sources: dict[str, str], entry: str) -> tuple[str, dict[str, str]]:
    """One translation unit holding every variant, each in its own namespace, entry renamed.

    Top-level ``#include`` lines are hoisted (once each) because system headers must not be
    opened inside a namespace; macros a variant defines are #undef'd after it so they cannot
    leak into the next one.
    """
    includes: list[str] = []
    bodies: list[str] = []
    symbols: dict[str, str] = {}
    for name, src in named_sources.items():
        sym = variant_symbol(entry, name)
        if sym in symbols.values():
            raise ValueError(f"variant names {name!r} and another map to the same symbol {sym}")
        symbols[name] = sym
        depth = 0
        kept: list[str] = []
        defined: list[str] = []
        for line in src.splitlines():
            if _RE_IF.match(line):
                depth += 1
            elif _RE_ENDIF.match(line):
                depth = max(0, depth - 1)
            if depth == 0 and _RE_INCLUDE.match(line):
                inc = line.strip()
                if inc not in includes:
                    includes.append(inc)
                continue
            if m := _RE_DEFINE.match(line):
                defined.append(m.group(1))
            kept.append(line)
        ns = "v_" + re.sub(r"[^0-9A-Za-z_]", "_", name)
        undefs = "".join(f"#undef {d}\n" for d in dict.fromkeys(defined) if d != entry)
        bodies.append(f"// ---- variant {name}\n#define {entry} {sym}\nnamespace {ns} {{\n"
                      + "\n".join(kept) + f"\n}}  // namespace {ns}\n#undef {entry}\n{undefs}")
    return "\n".join(includes) + "\n\n" + "\n".join(bodies), symbols


def compile_batch(named_sources: dict[str, str], entry: str, **kw: Any) -> tuple[CompileResult, dict[str, str]]:
    """Build trusted variants of one task into one .so; returns it and each variant's symbol.

    On failure (e.g. two variants declare the same ``extern "C"`` kernel) the caller should
    fall back to `compile_candidate` per variant.
    """
    src, symbols = batch_source(named_sources, entry)
    return compile_candidate(src, **kw), symbols
