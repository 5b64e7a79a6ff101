"""The harness result store (cudaperf.store): shared by processes, e.g. the ranks of a run."""
from __future__ import annotations

import multiprocessing as mp


def _open_and_count(path: str, q) -> None:
    from cudaperf.store import ResultStore

    try:
        st = ResultStore(path)
        q.put(("ok", st.path.name))
    except Exception as e:  # noqa: BLE001 - the test reports what went wrong in the child
        q.put(("error", repr(e)))


def test_many_processes_can_open_a_new_store_at_once(tmp_path):
    """Opening a new store switches it to WAL, which needs the database alone; processes that open
    it together must wait for each other, not fail with 'database is locked'."""
    ctx = mp.get_context("spawn")
    for round_ in range(3):
        path = str(tmp_path / f"store{round_}.sqlite")
        q = ctx.Queue()
        procs = [ctx.Process(target=_open_and_count, args=(path, q)) for _ in range(8)]
        for p in procs:
            p.start()
        got = [q.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        assert all(status == "ok" for status, _ in got), got
