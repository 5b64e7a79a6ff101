"""Result store: one EvalResult per (task, candidate source, evaluation settings, GPU).

Guarantees: a repeated candidate is answered from the store instead of being re-run; the key
covers everything that can change the record (task definition, exact source bytes, harness
fidelity settings, GPU model, toolchain), so a stale record is never served for a changed
setting. Safe to use from several threads of one process and from several processes (SQLite
with WAL and a busy timeout).
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from cudaperf.result import EvalResult


def make_key(*parts: Any) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode())
        h.update(b"\x00")
    return h.hexdigest()


class ResultStore:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False)
        with self._lock:
            # Processes opening a new store together (the ranks of a multi-GPU run) race for the
            # switch to WAL, which takes the database exclusively and can fail at once with
            # "database is locked" instead of waiting: retry for up to the connect timeout.
            for attempt in range(300):
                try:
                    self._db.execute("PRAGMA journal_mode=WAL")
                    self._db.execute("CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, "
                                     "task_id TEXT, record TEXT, created REAL)")
                    self._db.commit()
                    break
                except sqlite3.OperationalError as e:
                    if "locked" not in str(e) or attempt == 299:
                        raise
                    time.sleep(0.1)
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> EvalResult | None:
        with self._lock:
            row = self._db.execute("SELECT record FROM results WHERE key = ?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        res = EvalResult.from_dict(json.loads(row[0]))
        res.cached = True
        return res

    def put(self, key: str, result: EvalResult) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?)",
                             (key, result.task_id, result.to_json(), time.time()))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0

    def close(self) -> None:
        with self._lock:
            self._db.close()
