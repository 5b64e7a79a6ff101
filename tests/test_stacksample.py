import threading
import time

from cudaperf.stacksample import StackSampler


def _busy_in_project_code(stop):
    while not stop.is_set():
        sum(range(1000))


def _blocked(ev):
    ev.wait()


def _sample_while(target, seconds):
    """A sampler running while `target(event)` runs in a thread for `seconds` (then the event is set)."""
    ev = threading.Event()
    t = threading.Thread(target=target, args=(ev,))
    with StackSampler(interval=0.01) as s:
        t.start()
        time.sleep(seconds)  # this thread sleeps here: in project code when the test file counts as such
        ev.set()
        t.join()
    return s


def test_threads_outside_project_code_are_not_counted():
    s = _sample_while(_busy_in_project_code, 0.4)
    assert s.samples == 0  # this test file is not project code (nor is pytest)
    rep = s.report()
    assert rep.splitlines()[0].startswith("0 thread samples in project code, every 10 ms")


def test_sampler_counts_project_frames(monkeypatch):
    import cudaperf.stacksample as S

    monkeypatch.setattr(S, "_MARKERS", ("test_stacksample",))
    s = _sample_while(_busy_in_project_code, 0.4)
    assert s.samples >= 5
    (mine, _leaf), _ = s.counts.most_common(1)[0]
    assert mine.startswith(("_busy_in_project_code", "_sample_while"))
    assert "%" in s.report()


def test_blocked_threads_count_as_idle(monkeypatch):
    import cudaperf.stacksample as S

    monkeypatch.setattr(S, "_MARKERS", ("test_stacksample",))
    s = _sample_while(_blocked, 0.3)
    assert s.idle >= 5  # _blocked, waiting inside threading.py
    assert s.samples >= 5 and all(k[0].startswith("_sample_while") for k in s.counts)
