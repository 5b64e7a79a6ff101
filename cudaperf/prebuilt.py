"""Dataset variants compiled on one machine, installed into another machine's compile cache.

Why: verifying the ~10k dataset variants on a lent GPU is bound by nvcc on that machine's CPUs
(about 1.2 s per variant), while device time is the scarce resource. The CPU machine has the same
nvcc release, so it can build the libraries ahead of time; an archive of one shard's variants
travels with the device call and the harness finds them in its compile cache.

Guarantees:
  * `pack` compiles each variant with `cudaperf.compile.compile_candidate` (sandboxed, the
    harness' own flags) and stores the library, nvcc's log and the ptxas resources, keyed by a
    hash of (source, arch, flags) -- no machine in the key -- plus the builder's toolchain.
  * `install` installs nothing unless the installing machine's nvcc reports the same release
    line (``Cuda compilation tools, release X, VX.Y.Z``) as the builder's: same nvcc means the
    same front end, cicc and ptxas, hence the same device code; only the host stub's gcc may
    differ. Entries go into the compile cache under the installing machine's own keys, each
    marked ``built_with`` = the builder's toolchain, so every record evaluated with one carries
    ``versions["built_with"]`` and the measurement column ``built_with``. Failed builds are not
    packed: those variants compile on the GPU machine as usual and fail there in the open.
  * Model output is never prebuilt: only sources listed in the tasks' variants are installed.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Sequence

from cudaperf.compile import (CompileResult, _cache_paths, _store, cache_key, compile_many, toolchain_versions)
from cudaperf.tasks import Task

FORMAT = 1


def source_key(source: str, arch: str, flags: Sequence[str]) -> str:
    """Machine-independent key of one build: source, target and flags."""
    h = hashlib.sha256()
    for part in (source, arch, "\0".join(flags)):
        h.update(part.encode("utf-8", "surrogateescape"))
        h.update(b"\0\1")
    return h.hexdigest()[:32]


def nvcc_release(version_text: str) -> str:
    """The release line of ``nvcc --version`` (e.g. 'release 13.0, V13.0.88'), '' when absent."""
    m = re.search(r"release [\d.]+, V[\d.]+", version_text)
    return m.group(0) if m else ""


def builder_toolchain() -> str:
    v = toolchain_versions()
    gcc = (v["gcc"].splitlines() or ["gcc ?"])[0]
    return f"nvcc {nvcc_release(v['nvcc']) or '?'}; {gcc}"


def variant_sources(tasks: Sequence[Task]) -> list[str]:
    """Every variant source of `tasks`, each once, in order."""
    seen, out = set(), []
    for t in tasks:
        for v in t.variants:
            if v.source not in seen:
                seen.add(v.source)
                out.append(v.source)
    return out


def pack(tasks: Sequence[Task], out: str | Path, *, arch: str = "sm_90", flags: Sequence[str] = ("-O3", "-std=c++17"),
         jobs: int = 0, timeout_s: float = 120, progress: bool = True) -> dict:
    """Compile every variant of `tasks` and write the archive `out` (tar.gz). Returns its summary."""
    flags = tuple(flags)
    sources = variant_sources(tasks)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="cudaperf-prebuilt-") as cache:
        results = compile_many(sources, jobs=jobs, progress=progress, arch=arch, flags=flags,
                               timeout_s=timeout_s, cache_dir=cache)
        entries, failed = {}, 0
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.tmp")
        with tarfile.open(tmp, "w:gz", compresslevel=9) as tar:
            for src, r in zip(sources, results):
                if not r.ok or not r.so_path:
                    failed += 1
                    continue
                k = source_key(src, arch, flags)
                tar.add(r.so_path, arcname=f"lib/{k}.so")
                entries[k] = {"log": r.log, "resources": r.resources, "seconds": round(r.seconds, 3)}
            summary = {"format": FORMAT, "arch": arch, "flags": list(flags), "built_with": builder_toolchain(),
                       "nvcc_release": nvcc_release(toolchain_versions()["nvcc"]), "variants": len(sources),
                       "packed": len(entries), "failed": failed, "seconds": round(time.monotonic() - t0, 1),
                       "tasks": len(tasks)}
            data = json.dumps({**summary, "entries": entries}).encode()
            info = tarfile.TarInfo("manifest.json")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        tmp.replace(out)
    return summary


def install(archive: str | Path, tasks: Sequence[Task], cache_dir: str | Path, *, arch: str = "sm_90",
            flags: Sequence[str] = ("-O3", "-std=c++17")) -> dict:
    """Install the archive's libraries for `tasks`' variants into the compile cache at `cache_dir`.
    Returns counts; installs nothing (``refused`` says why) when the nvcc release or the build
    settings differ."""
    flags = tuple(flags)
    with tarfile.open(archive, "r:gz") as tar:
        man = json.loads(tar.extractfile("manifest.json").read())
        here = nvcc_release(toolchain_versions()["nvcc"])
        why = None
        if man.get("format") != FORMAT:
            why = f"archive format {man.get('format')} (this code reads {FORMAT})"
        elif not here or man.get("nvcc_release") != here:
            why = f"built with nvcc {man.get('nvcc_release')!r}, this machine has {here or 'no nvcc'!r}"
        elif man.get("arch") != arch or tuple(man.get("flags", ())) != flags:
            why = f"built for {man.get('arch')} {man.get('flags')}, the harness uses {arch} {list(flags)}"
        counts = {"archive_entries": len(man.get("entries", {})), "installed": 0, "already_cached": 0,
                  "not_in_archive": 0, "built_with": man.get("built_with"), "refused": why}
        if why:
            return counts
        for src in variant_sources(tasks):
            k = source_key(src, arch, flags)
            entry = man["entries"].get(k)
            if entry is None:
                counts["not_in_archive"] += 1
                continue
            key = cache_key(src, arch, flags)
            meta_p, so_p = _cache_paths(cache_dir, key)
            if meta_p.exists():
                counts["already_cached"] += 1
                continue
            with tempfile.NamedTemporaryFile(suffix=".so") as fh:
                fh.write(tar.extractfile(f"lib/{k}.so").read())
                fh.flush()
                _store(cache_dir, CompileResult(ok=True, so_path=None, log=entry["log"], resources=entry["resources"],
                                                seconds=entry["seconds"], key=key, built_with=man["built_with"]),
                       Path(fh.name))
            counts["installed"] += 1
    return counts


def not_yet_measured(tasks: Sequence[Task], rows_files: Sequence[str | Path]) -> list[Task]:
    """`tasks` less those with a measured (non-error) row in any of the JSONL `rows_files`.

    Why: the torch2cuda archive is rebuilt on every fresh CPU machine (14 minutes for all 1,098
    tasks on 2 cores) and installed on every fresh GPU machine; packing only the tasks still to
    verify saves both."""
    from cudaperf.torchtasks.verify import done_ids

    done: set[str] = set().union(*(done_ids(Path(p)) for p in rows_files))
    return [t for t in tasks if t.task_id not in done]


def main(argv: Sequence[str] | None = None) -> int:
    from cudaperf.tasks import load_tasks, shard_tasks

    ap = argparse.ArgumentParser(prog="python -m cudaperf.prebuilt", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("pack", "install"):
        p = sub.add_parser(name)
        p.add_argument("--tasks", default="data/tasks/c2cuda.jsonl.gz")
        p.add_argument("--shard", type=int, default=0)
        p.add_argument("--of", type=int, default=1, help="the tasks of shard K of N, as verify_dataset.py picks them")
        p.add_argument("--arch", default="sm_90")
        p.add_argument("--flags", nargs="*", default=["-O3", "-std=c++17"])
        if name == "pack":
            p.add_argument("--out", required=True)
            p.add_argument("--jobs", type=int, default=0)
            p.add_argument("--skip-done", nargs="*", default=[], metavar="ROWS",
                           help="torch2cuda verification rows (data/measurements/torch2cuda_*.jsonl): tasks "
                           "measured there are left out, so the archive holds only what is still to verify")
        else:
            p.add_argument("--archive", required=True)
            p.add_argument("--cache-dir", default=".cache/cudaperf")
    a = ap.parse_args(argv)
    try:
        tasks = shard_tasks(load_tasks(a.tasks), a.shard, a.of)
    except ValueError as e:
        ap.error(str(e))
    if a.cmd == "pack":
        tasks = not_yet_measured(tasks, a.skip_done)
        print(json.dumps(pack(tasks, a.out, arch=a.arch, flags=a.flags, jobs=a.jobs)))
    else:
        counts = install(a.archive, tasks, a.cache_dir, arch=a.arch, flags=a.flags)
        print(json.dumps(counts))
        return 1 if counts["refused"] else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
