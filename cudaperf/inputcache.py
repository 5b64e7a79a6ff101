"""Input files of one (task, test configuration, seed), written once per harness and hard-linked
into every runner's scratch directory.

Why: at the perf sizes one configuration's inputs are hundreds of MB, and every candidate of a
task is checked on the same few seeds; drawing and writing them anew for each candidate was
most of the CPU time of a check.

Guarantees of `InputFiles`:

* `link_into(key, generate, params, dst)` makes ``dst/<name>.bin`` for every pointer input in
  `params` ((name, dtype, numel) triples) and returns the remaining (scalar) values of the
  generated inputs; `generate()` runs once per key while the entry stays cached, and concurrent
  callers with the same key wait for that one call.
* The cached files are mode 0444 and owned by this process' user: a runner under another uid can
  read but not modify them, and unlinking its hard link changes nothing here.
* The files' total size stays within `max_bytes` (least recently used entries are removed whole,
  never the one just made); an entry removed while another thread links it is regenerated.
"""
from __future__ import annotations

import collections
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Hashable, Sequence

import numpy as np


@dataclass
class _Entry:
    dir: Path
    names: tuple[str, ...]
    scalars: dict[str, Any]
    nbytes: int


class InputFiles:
    def __init__(self, base: str | Path, max_bytes: int = 8 << 30):
        self.base = Path(base)
        self.base.mkdir(parents=True, exist_ok=True)
        os.chmod(self.base, 0o711)
        self.max_bytes = int(max_bytes)
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._mu = threading.Lock()
        self._entries: collections.OrderedDict[Hashable, _Entry] = collections.OrderedDict()
        self._building: dict[Hashable, threading.Event] = {}

    def link_into(self, key: Hashable, generate: Callable[[], dict[str, Any]],
                  params: Sequence[tuple[str, Any, int]], dst: str | Path) -> dict[str, Any]:
        dst = Path(dst)
        for _ in range(3):
            entry = self._get(key, generate, params)
            try:
                for name in entry.names:
                    target = dst / f"{name}.bin"
                    if not target.exists():
                        os.link(entry.dir / f"{name}.bin", target)
                return dict(entry.scalars)
            except FileNotFoundError:  # evicted while we linked: make it again
                with self._mu:
                    if self._entries.get(key) is entry:
                        self._remove(key)
        raise RuntimeError(f"input files for {key!r} kept disappearing while being linked")

    def _get(self, key: Hashable, generate: Callable[[], dict[str, Any]],
             params: Sequence[tuple[str, Any, int]]) -> _Entry:
        while True:
            with self._mu:
                hit = self._entries.get(key)
                if hit is not None:
                    self._entries.move_to_end(key)
                    self.hits += 1
                    return hit
                event = self._building.get(key)
                if event is None:
                    self._building[key] = threading.Event()
                    break
            event.wait()
        try:
            entry = self._write(generate(), params)
            with self._mu:
                self._entries[key] = entry
                self.bytes += entry.nbytes
                self.misses += 1
                while self.bytes > self.max_bytes and len(self._entries) > 1:
                    self._remove(next(iter(self._entries)))
            return entry
        finally:
            with self._mu:
                self._building.pop(key).set()

    def _write(self, inputs: dict[str, Any], params: Sequence[tuple[str, Any, int]]) -> _Entry:
        d = Path(tempfile.mkdtemp(dir=self.base, prefix="in-"))
        os.chmod(d, 0o711)
        nbytes, names = 0, []
        try:
            for name, dtype, numel in params:
                arr = np.ascontiguousarray(inputs[name], dtype=dtype)
                if arr.size != numel:
                    raise ValueError(f"input {name}: generated {arr.size} elements, the signature says {numel}")
                f = d / f"{name}.bin"
                arr.tofile(f)
                os.chmod(f, 0o444)
                nbytes += arr.nbytes
                names.append(name)
        except BaseException:
            shutil.rmtree(d, ignore_errors=True)
            raise
        scalars = {k: v for k, v in inputs.items() if k not in names}
        return _Entry(d, tuple(names), scalars, nbytes)

    def _remove(self, key: Hashable) -> None:  # caller holds _mu
        entry = self._entries.pop(key)
        self.bytes -= entry.nbytes
        shutil.rmtree(entry.dir, ignore_errors=True)

    def clear(self) -> None:
        with self._mu:
            for key in list(self._entries):
                self._remove(key)
