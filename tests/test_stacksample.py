import threading
import time

from cudaperf.stacksample import StackSampler


def _busy_in_project_code(stop):
    while not stop.is_set():
        sum(range(1000))


def _blocked(ev):
    ev.wait()


def test_threads_outside_project_code_are_not_counted():
    stop = threading.Event()
    t = threading.Thread(target=_busy_in_project_code, args=(stop,))
    with StackSampler(interval=0.01) as s:
        t.start()
        time.sleep(0.4)
        stop.set()
        t.join()
    assert s.samples == 0  # this test file is not project code (nor is pytest)
    rep = s.report()
    assert rep.splitlines()[0].startswith("0 thread samples in project code, every 10 ms")


def test_sampler_counts_project_frames(monkeypatch):
    import cudaperf.stacksample as S

    monkeypatch.setattr(S, "_MARKERS", ("test_stacksample",))
    stop = threading.Event()
    t = threading.Thread(target=_busy_in_project_code, args=(stop,))
    with StackSampler(interval=0.01) as s:
        t.start()
        time.sleep(0.4)
        stop.set()
        t.join()
    assert s.samples >= 5
    (mine, _leaf), _ = s.counts.most_common(1)[0]
    assert mine.startswith(("_busy_in_project_code", "test_sampler_counts_project_frames"))
    assert "%" in s.report()


def test_blocked_threads_count_as_idle(monkeypatch):
    import cudaperf.stacksample as S

    monkeypatch.setattr(S, "_MARKERS", ("test_stacksample",))
    ev = threading.Event()
    t = threading.Thread(target=_blocked, args=(ev,))
    with StackSampler(interval=0.01) as s:
        t.start()
        time.sleep(0.3)  # this thread (the test) sleeps in project code: a working sample
        ev.set()
        t.join()
    assert s.idle >= 5  # _blocked, waiting inside threading.py
    assert s.samples >= 5 and all(k[0].startswith("test_blocked") for k in s.counts)
