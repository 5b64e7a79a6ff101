"""InputFiles: generated once per key, linked read-only, bounded by bytes, safe under threads."""
from __future__ import annotations

import os
import stat
import threading

import numpy as np
import pytest

from cudaperf.inputcache import InputFiles

PARAMS = [("x", np.float32, 1000), ("y", np.int32, 10)]


def _gen(calls, scale=1.0):
    def g():
        calls.append(1)
        return {"x": np.arange(1000, dtype=np.float32) * scale, "y": np.arange(10), "n": 1000, "a": 2.5}
    return g


def test_generates_once_links_read_only_and_returns_scalars(tmp_path):
    cache = InputFiles(tmp_path / "cache")
    calls = []
    for i in range(3):
        dst = tmp_path / f"run{i}"
        dst.mkdir()
        scalars = cache.link_into("k", _gen(calls), PARAMS, dst)
        assert scalars == {"n": 1000, "a": 2.5}
        assert np.array_equal(np.fromfile(dst / "x.bin", dtype=np.float32), np.arange(1000, dtype=np.float32))
        assert np.fromfile(dst / "y.bin", dtype=np.int32).tolist() == list(range(10))
        mode = stat.S_IMODE(os.stat(dst / "x.bin").st_mode)
        assert mode == 0o444, oct(mode)
    assert len(calls) == 1 and cache.hits == 2 and cache.misses == 1
    os.unlink(tmp_path / "run0" / "x.bin")  # a runner removing its link changes nothing cached
    dst = tmp_path / "again"
    dst.mkdir()
    cache.link_into("k", _gen(calls), PARAMS, dst)
    assert (dst / "x.bin").stat().st_size == 4000 and len(calls) == 1


def test_concurrent_callers_share_one_generation(tmp_path):
    cache = InputFiles(tmp_path / "cache")
    calls, gate = [], threading.Event()

    def slow():
        gate.wait(5)
        return _gen(calls)()

    errors = []

    def worker(i):
        d = tmp_path / f"r{i}"
        d.mkdir()
        try:
            cache.link_into("k", slow, PARAMS, d)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    gate.set()
    for t in ts:
        t.join(10)
    assert not errors and len(calls) == 1
    assert all((tmp_path / f"r{i}" / "x.bin").exists() for i in range(8))


def test_bytes_bounded_by_lru_eviction_and_evicted_keys_regenerate(tmp_path):
    cache = InputFiles(tmp_path / "cache", max_bytes=2 * 4040)  # room for two entries
    calls = []
    for k in ("a", "b", "c"):
        d = tmp_path / k
        d.mkdir()
        cache.link_into(k, _gen(calls), PARAMS, d)
    assert cache.bytes <= 2 * 4040 and len(calls) == 3
    assert len(list((tmp_path / "cache").iterdir())) == 2
    assert (tmp_path / "a" / "x.bin").stat().st_size == 4000, "a link outlives its evicted entry"
    d = tmp_path / "a2"
    d.mkdir()
    cache.link_into("a", _gen(calls), PARAMS, d)  # "a" was the oldest: made again
    assert len(calls) == 4


def test_wrong_size_is_an_error_and_leaves_nothing(tmp_path):
    cache = InputFiles(tmp_path / "cache")
    d = tmp_path / "r"
    d.mkdir()
    with pytest.raises(ValueError, match="signature says"):
        cache.link_into("k", lambda: {"x": np.zeros(3, np.float32), "y": np.zeros(10)}, PARAMS, d)
    assert list((tmp_path / "cache").iterdir()) == [] and cache.bytes == 0
    calls = []
    cache.link_into("k", _gen(calls), PARAMS, d)  # a later good generation still works
    assert len(calls) == 1
