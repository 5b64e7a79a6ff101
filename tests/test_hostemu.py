"""The harness' GPU path on a CPU machine, through a host-emulated runner.

`cudaperf/runner/runner.cpp` is compiled with g++ against `tests/hostemu/cuda_runtime.h`
(device memory = host memory, events = host clock) and candidates are plain C: the task's entry
on host pointers. Everything between the harness and the runner is then the real thing: the
sandboxed runner process and its protocol (stage / alloc / reset / run / store / time with
several slots), the GPU lock, poisoned outputs, the inputs-unchanged check, the recheck on the
timed buffers, the speedup over the naive variant timed in the same region, and dataset
verification's variant groups with their fallback. The numbers are host times: they test
bookkeeping (which slot's times go where), never performance.
"""
from __future__ import annotations

import copy
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from cudaperf import gpuworker, harness as H
from cudaperf.config import get_profile
from cudaperf.devtasks import dev_tasks
from cudaperf.tasks import task_from_dict

pytestmark = pytest.mark.timeout(600)
ROOT = Path(__file__).resolve().parents[1]


def _row_sum_task():
    """dev/row_sum_f32 at sizes a CPU gets through quickly (the perf size still > 1 µs a call)."""
    d = copy.deepcopy([t for t in dev_tasks() if t.task_id == "dev/row_sum_f32"][0].to_dict())
    d["task_id"] = "emu/row_sum_f32"
    for test in d["tests"]:
        if test.get("perf"):
            test["sizes"] = {"rows": 300, "cols": 257}
    return task_from_dict(d)


TASK = _row_sum_task()
REF = TASK.reference
ZEROS = REF.replace("out[r] = s;", "out[r] = 0.0f * s;")
WRITES_INPUT = REF.replace("out[r] = s;", "out[r] = s; ((float *)a)[r * cols] = 0.0f;")
SEGFAULT = REF.replace("out[r] = s;", "((float *)0)[r] = s;")
SLOW = REF.replace("void row_sum(int rows, int cols, const float *a, float *out) {",
                   "void row_sum(int rows, int cols, const float *a, float *out) {\n"
                   "  for (volatile int rep = 0; rep < 6; rep++)")
# Remembers its result per (pointers, sizes) and skips the work on a repeat: the spot check of a
# timed call catches it, and without one the recheck on fresh inputs in the timed buffers does.
MEMO = """static const float *last_a; static float *last_out; static int last_rows = -1, last_cols = -1;
""" + REF.replace("void row_sum(int rows, int cols, const float *a, float *out) {",
                  "void row_sum(int rows, int cols, const float *a, float *out) {\n"
                  "  if (a == last_a && out == last_out && rows == last_rows && cols == last_cols) return;\n"
                  "  last_a = a; last_out = out; last_rows = rows; last_cols = cols;")


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    """A Harness whose runner is host-emulated and whose 'nvcc' is gcc on C candidates
    (cudaperf.hostemu)."""
    from cudaperf.hostemu import emulated_harness

    cache = tmp_path_factory.mktemp("emu-cache")
    cfg = get_profile("smoke", **{"harness.cache_dir": str(cache), "harness.flush_l2": False,
                                  "harness.reps": 7, "harness.warmup": 1, "harness.run_timeout_s": 3.0}).harness
    with emulated_harness(cfg, tmp_path_factory.mktemp("emu-libs"), workers_per_gpu=2) as h:
        yield h


def test_one_candidate_path_verdicts(emu):
    ok, zeros, writes, memo = emu.evaluate_many([(TASK, REF), (TASK, ZEROS), (TASK, WRITES_INPUT), (TASK, MEMO)])
    assert ok.status == "correct" and ok.correct and ok.pass_rate == 1.0, (ok.message, ok.failures)
    assert ok.gpu == "Host Emulator" and ok.runtime_ms > 0 and ok.baseline_ms > 0 and ok.cv is not None
    assert ok.baseline_clean_ms > 0 and ok.speedup > 0
    # the timed repetitions themselves and both CVs of them (harness.robust_cv)
    assert len(ok.rep_ms) == 7 and ok.runtime_ms == pytest.approx(sorted(ok.rep_ms)[3], rel=1e-4)
    assert ok.cv_robust is not None and ok.cv_robust >= 0 and ok.baseline_cv_robust is not None
    for key in ("runner_start", "check", "time", "recheck", "lock_wait_shared", "lock_held_exclusive"):
        assert key in ok.timings, key
    assert zeros.status == "wrong" and zeros.pass_rate < 1.0 and zeros.runtime_ms is None
    assert any(f.get("reason") == "mismatch" for f in zeros.failures)
    assert writes.status == "wrong" and any(f.get("reason") == "input_modified" and f["params"] == ["a"]
                                            for f in writes.failures)
    assert memo.status == "wrong" and "hack:timed_calls_differ" in memo.flags, (memo.message, memo.failures)
    assert memo.pass_rate == 1.0 and memo.runtime_ms is not None  # caught after timing, not before


# Can start a thread of its own (never does): the scan flags it, and its runner gets the GPU alone.
THREADED = ("#include <pthread.h>\nstatic void *idle(void *p) { return p; }\n"
            "void never_called(void) { pthread_t t; pthread_create(&t, 0, idle, 0); }\n" + REF)


def test_candidate_that_can_start_threads_is_judged_with_the_gpu_alone(emu, monkeypatch):
    """GPU_ALONE_SUSPICIONS: the whole runner life of such a candidate holds the GPU lock
    exclusively (others wait), the verdict is still the honest one, clean candidates share."""
    from cudaperf.gpulock import GpuLock

    held: list[bool] = []
    real = GpuLock.alone

    def spy(self):
        held.append(True)
        return real(self)

    monkeypatch.setattr(GpuLock, "alone", spy)
    thr, ok = emu.evaluate_many([(TASK, THREADED), (TASK, REF + "\n// clean\n")])
    assert "suspicious:threads" in thr.flags and thr.timings.get("gpu_alone") == 1.0
    assert thr.status == "correct", (thr.message, thr.failures)
    assert ok.status == "correct" and "gpu_alone" not in ok.timings
    assert held == [True]
    # Its runner's whole life was one exclusive hold: its start and checks too, not only its timed region.
    assert thr.timings["lock_held_exclusive"] >= 0.9 * sum(thr.timings[k] for k in ("runner_start", "check", "time"))


EXITS = "#include <stdlib.h>\n" + REF.replace("out[r] = s;", "out[r] = s; if (rows > 100) exit(0);")
HANGS = "#include <unistd.h>\n" + REF.replace("out[r] = s;", "out[r] = s; if (rows > 100) for (;;) pause();")


@pytest.mark.parametrize("src,reason", [(SEGFAULT, "exited"), (EXITS, "exited"), (HANGS, "timeout")])
def test_crashing_candidate_gets_its_record(emu, src, reason):
    """A candidate that kills or hangs its runner mid-check still gets exactly one record."""
    (r,) = emu.evaluate_many([(TASK, src)])
    assert r.status == "crashed" and not r.correct and r.runtime_ms is None, r.message
    assert any(f.get("stage") == "run" and f.get("reason") == reason for f in r.failures), r.failures


def test_variant_group_times_each_slot_and_judges_each_variant(emu):
    (a, slow, zeros, b), = emu.evaluate_groups([(TASK, [REF, SLOW, ZEROS, REF + "\n// same\n"])])
    for r in (a, slow, b):
        assert r.status == "correct", (r.message, r.failures)
        assert r.timings["group_size"] == 4 and "note:group_fallback" not in r.flags
        assert r.baseline_ms == a.baseline_ms  # one timed region: one naive measurement for all
        assert r.baseline_clean_ms == a.baseline_clean_ms
    assert zeros.status == "wrong" and zeros.runtime_ms is None
    # The slow variant's times are its own (slot order kept through the interleaved region).
    assert slow.runtime_ms > 2 * max(a.runtime_ms, b.runtime_ms), (slow.runtime_ms, a.runtime_ms, b.runtime_ms)
    assert slow.speedup < 0.5 < a.speedup


def test_variant_group_falls_back_one_by_one_when_the_runner_dies(emu):
    (good, bad), = emu.evaluate_groups([(TASK, [REF + "\n// fb\n", SEGFAULT + "\n// fb\n"])])
    assert "note:group_fallback" in good.flags and "note:group_fallback" in bad.flags
    assert good.status == "correct" and bad.status == "crashed"
    assert "group_size" not in good.timings  # the record is the one-candidate path's


# A sticky device error on the perf-size test (as an illegal address on a GPU): the runner
# replies "cuda ..." and exits.
STICKY = "extern int cudaperf_emu_error;\n" + REF.replace("out[r] = s;", "out[r] = s; if (rows > 100) cudaperf_emu_error = 700;")


def test_sticky_device_error_in_a_group_beside_another_group_of_the_same_task(emu):
    """The GPU test of the same name, on the emulator: two groups of one task at once, one of them
    ending in a sticky error: the other group is unaffected, the failing one falls back."""
    (a, b, c), (d, e) = emu.evaluate_groups([(TASK, [REF + "\n// s1\n", ZEROS, REF + "\n// s2\n"]),
                                             (TASK, [REF + "\n// s3\n", STICKY])])
    assert (a.status, b.status, c.status) == ("correct", "wrong", "correct"), (a.message, b.message, c.message)
    assert not any("note:group_fallback" in r.flags for r in (a, b, c))
    assert d.status == "correct" and "note:group_fallback" in d.flags, (d.message, d.flags)
    assert e.status == "crashed" and "note:group_fallback" in e.flags, (e.message, e.failures)


def test_streamed_groups_are_gated_and_reported_as_they_finish(emu):
    """evaluate_groups' streaming hooks on the real harness: a gated-off group is never run (its
    entry is None), and on_done sees every group that ran, with the records it returns."""
    import threading

    groups = [(TASK, [REF + "\n// g0\n"]), (TASK, [ZEROS + "\n// g1\n"]), (TASK, [REF + "\n// g2\n", ZEROS])]
    asked, seen, mu = [], {}, threading.Lock()

    def gate(i):
        with mu:
            asked.append(i)
        return i != 1

    def on_done(i, recs):
        with mu:
            seen[i] = [r.status for r in recs]

    out = emu.evaluate_groups(groups, gate=gate, on_done=on_done)
    assert sorted(asked) == [0, 1, 2] and out[1] is None
    assert seen == {0: ["correct"], 2: ["correct", "wrong"]}
    assert [[r.status for r in g] for g in (out[0], out[2])] == [seen[0], seen[2]]


def test_group_and_one_by_one_agree_on_verdicts(emu):
    srcs = [REF + "\n// agree\n", ZEROS + "\n// agree\n", WRITES_INPUT + "\n// agree\n", MEMO + "\n// agree\n"]
    (grouped,) = emu.evaluate_groups([(TASK, srcs)])
    single = emu.evaluate_many([(TASK, s) for s in srcs])
    assert [r.status for r in grouped] == [r.status for r in single] == ["correct", "wrong", "wrong", "wrong"], [(r.message, r.failures[-1:]) for r in single]
    # The memoising variant: a group (our own code) has no spot check, so its recheck catches it.
    assert "hack:stateful_or_cached" in grouped[3].flags and "hack:timed_calls_differ" in single[3].flags
    grouped, single = grouped[:3], single[:3]
    # Verdict flags agree; flags from host timings (a disturbed baseline) are noise here.
    timing_flags = {"hack:baseline_disturbed", "hack:faster_than_roofline"}

    def verdict_flags(r):
        return sorted(f for f in r.flags if f.startswith("hack:") and f not in timing_flags)
    assert [verdict_flags(r) for r in grouped] == [verdict_flags(r) for r in single]


# Computes for the first 4 calls (one checked call per test configuration), skips the work for
# the next 30 (the warm-up and timed calls), then computes again (the recheck): only a check of a
# timed call sees it. Host state is flagged by the static scan too; the spot check does not rely on it.
SKIPS_WHILE_TIMED = "static int calls;\n" + REF.replace(
    "void row_sum(int rows, int cols, const float *a, float *out) {",
    "void row_sum(int rows, int cols, const float *a, float *out) {\n"
    "  calls++;\n  if (calls > 4 && calls <= 12) return;")


def test_spot_check_catches_work_skipped_while_timed(emu):
    (r,) = emu.evaluate_many([(TASK, SKIPS_WHILE_TIMED)])
    assert r.status == "wrong" and "hack:timed_calls_differ" in r.flags, (r.message, r.failures)
    assert r.pass_rate == 1.0  # every checked call was right
    (spot,) = [f for f in r.failures if f.get("stage") == "timed"]
    assert spot["reason"] == "mismatch" and 0 <= spot["timed_rep"] < 7


def test_spot_check_off_lets_it_through(emu, monkeypatch):
    """The same candidate without the spot check: correct, its inflated timing believed (which
    is why the check is on by default)."""
    import dataclasses

    monkeypatch.setattr(emu, "cfg", dataclasses.replace(emu.cfg, spot_check=False))
    r, memo = emu.evaluate_many([(TASK, SKIPS_WHILE_TIMED + "\n// off\n"), (TASK, MEMO + "\n// off\n")])
    assert r.status == "correct" and "hack:timed_calls_differ" not in r.flags, (r.message, r.failures)
    assert memo.status == "wrong" and "hack:stateful_or_cached" in memo.flags  # the recheck still works


def test_trusted_mode_skips_the_recheck_and_the_second_seed(emu, monkeypatch):
    """recheck=False, check_seeds=1 (dataset verification of our own variants): verdicts and
    timings as before, no 'recheck' timing, and only seed 0's references are made. Without the
    spot check, a memoising candidate then passes: which is why it is for trusted code only."""
    import dataclasses

    monkeypatch.setattr(emu, "cfg", dataclasses.replace(emu.cfg, recheck=False, check_seeds=1, spot_check=False))
    seeds = []
    real = H.Harness._reference

    def spy(self, task, test, seed):
        seeds.append(seed)
        return real(self, task, test, seed)

    monkeypatch.setattr(H.Harness, "_reference", spy)
    ok, zeros, memo = emu.evaluate_many([(TASK, REF + "\n// t1\n"), (TASK, ZEROS + "\n// t1\n"),
                                         (TASK, MEMO + "\n// t1\n")])
    assert ok.status == "correct" and ok.runtime_ms > 0 and "recheck" not in ok.timings, ok.timings
    assert zeros.status == "wrong"
    assert memo.status == "correct"  # nothing rechecks it: trusted code only
    (a, z), = emu.evaluate_groups([(TASK, [REF + "\n// t2\n", ZEROS + "\n// t2\n"])])
    assert a.status == "correct" and a.runtime_ms > 0 and "recheck" not in a.timings
    assert z.status == "wrong"
    assert set(seeds) == {0}


def test_reference_reads_the_runners_input_files(emu, tmp_path):
    """The harness's references are computed on its input-file store: inputs drawn once for the
    reference and the runners, and the outputs equal a reference that drew its own."""
    from cudaperf import reference

    test = TASK.tests[1]
    before = emu._input_files.misses
    got = emu._reference(TASK, test, 11)
    assert emu._input_files.misses == before + 1
    hits = emu._input_files.hits
    runner_dir = emu.scratch_base / "test-runner"  # (hard links: the store's filesystem)
    runner_dir.mkdir()
    emu._link_inputs(TASK, test, 11, runner_dir)  # a runner's staging: no new draw
    assert emu._input_files.hits == hits + 1 and emu._input_files.misses == before + 1
    for f in runner_dir.rglob("*.bin"):  # the store's files stay ours and read-only, whatever ran on them
        st = f.stat()
        assert st.st_uid == os.geteuid() and st.st_mode & 0o777 == 0o444, f
    assert list(runner_dir.rglob("*.bin"))
    own = reference.reference_outputs(TASK, test, 11, cache_dir=tmp_path / "own")
    assert set(got) == set(own) and all(np.array_equal(got[k], own[k]) for k in got)


def test_no_descriptor_leak_over_many_evaluations(emu):
    """Groups, single candidates and crashing runners leave no descriptors behind (a verification
    run holds the harness for an hour; session 6 saw descriptors past 1023 on the H200)."""
    emu.evaluate_many([(TASK, REF + "\n// fd warm\n")])
    before = len(os.listdir("/proc/self/fd"))
    for i in range(6):
        emu.evaluate_groups([(TASK, [REF + f"\n// fd{i}\n", ZEROS + f"\n// fd{i}\n"])])
        emu.evaluate_many([(TASK, SEGFAULT + f"\n// fd{i}\n"), (TASK, REF + f"\n// fd one {i}\n")])
    after = len(os.listdir("/proc/self/fd"))
    assert after - before <= 3, f"{after - before} more open descriptors after 18 evaluations"


@pytest.fixture()
def shared(emu):
    """The emulated harness with share_runner on (and back off after the test)."""
    import dataclasses

    old = emu.cfg
    emu.cfg = dataclasses.replace(old, share_runner=True)
    yield emu
    emu.cfg = old


def test_shared_runner_judges_each_candidate_as_its_own_runner_would(shared):
    """Clean candidates of a task share runners and get the one-candidate path's verdicts, their
    own timings and the spot check; a flagged candidate (file-scope state) runs alone. The
    emulated harness has 2 slots, so one task's 4 clean candidates go 2 to a runner."""
    srcs = [REF + "\n// sh\n", ZEROS + "\n// sh\n", WRITES_INPUT + "\n// sh\n", SLOW + "\n// sh\n", MEMO + "\n// sh\n"]
    ok, zeros, writes, slow, memo = shared.evaluate_many([(TASK, s) for s in srcs])
    assert [r.status for r in (ok, zeros, writes, slow, memo)] == ["correct", "wrong", "wrong", "correct", "wrong"], \
        [(r.message, r.failures[-1:]) for r in (ok, zeros, writes, slow, memo)]
    for pos, r in enumerate((ok, zeros, writes, slow)):
        assert r.timings["shared_runner"] == 2 and r.timings["shared_position"] == pos % 2, r.timings
        assert "note:shared_fallback" not in r.flags and r.gpu == "Host Emulator"
    assert any(f.get("reason") == "input_modified" for f in writes.failures)
    assert ok.baseline_clean_ms > 0 and ok.baseline_clean_ms == slow.baseline_clean_ms  # timed once, alone
    assert slow.runtime_ms > 2 * ok.runtime_ms and slow.speedup < 0.5 < ok.speedup, (slow.runtime_ms, ok.runtime_ms)
    # the memoising candidate has file-scope state: the scan flags it, it gets a runner of its own
    assert "shared_runner" not in memo.timings and "hack:timed_calls_differ" in memo.flags, memo.flags


def test_shared_runner_death_costs_only_the_candidate_that_caused_it(shared):
    """A candidate that kills its shared runner is judged again alone (and crashes there, as its
    own verdict); the candidate after it continues in a fresh shared runner; the other runner of
    the task (6 candidates, 2 slots: 3 to a runner) is unaffected."""
    srcs = [REF + "\n// d0\n", SEGFAULT + "\n// d1\n", REF + "\n// d2\n",
            ZEROS + "\n// d3\n", REF + "\n// d4\n", REF + "\n// d5\n"]
    a, seg, c, zeros, e, f = shared.evaluate_many([(TASK, s) for s in srcs])
    assert [r.status for r in (a, seg, c, zeros, e, f)] == ["correct", "crashed", "correct", "wrong", "correct",
                                                           "correct"], [(r.message, r.failures[-1:]) for r in (a, seg, c)]
    assert (a.timings["shared_runner"], a.timings["shared_position"]) == (3, 0)
    assert "note:shared_fallback" in seg.flags and "shared_runner" not in seg.timings  # its own runner's record
    assert any(x.get("stage") == "run" and x.get("reason") == "exited" for x in seg.failures), seg.failures
    assert (c.timings["shared_runner"], c.timings["shared_position"]) == (1, 0)  # a fresh shared runner
    for pos, r in enumerate((zeros, e, f)):
        assert (r.timings["shared_runner"], r.timings["shared_position"]) == (3, pos)
        assert "note:shared_fallback" not in r.flags


def test_shared_runner_chunks_use_every_slot():
    from cudaperf.sharedrunner import chunk_size

    assert chunk_size(3, groups=80, slots=16) == 3  # many tasks: a runner per task
    assert chunk_size(16, groups=8, slots=16) == 8  # a GRPO step: two runners per task
    assert chunk_size(16, groups=1, slots=16) == 1  # one task: a runner per candidate
    assert chunk_size(5, groups=2, slots=4) == 3
    # Session 18's GRPO step: 16 tasks x 8 in 12 slots. One runner per task made two waves, the
    # second a third full; runners of 4 make three full-ish waves of half the length.
    assert chunk_size(8, groups=16, slots=12) == 4
    assert chunk_size(8, groups=8, slots=12) < 8  # fewer tasks than slots: split them
    assert chunk_size(1, groups=5, slots=4) == 1 and chunk_size(0, groups=0, slots=0) == 1
    # Never a worse wave count x chunk than one runner per task, in the model it minimises.
    import math

    from cudaperf.sharedrunner import RUNNER_COST_IN_CANDIDATES as r

    for n in range(1, 13):
        for g in range(1, 40):
            for s in (1, 4, 12, 16):
                c = chunk_size(n, groups=g, slots=s)
                assert 1 <= c <= n
                cost = math.ceil(g * math.ceil(n / c) / s) * (c + r)
                assert cost <= math.ceil(g / s) * (n + r) + 1e-9


LEAKS = "extern long long cudaperf_emu_leaked;\n" + REF.replace(
    "out[r] = s;", "out[r] = s; if (r == 0) cudaperf_emu_leaked += 1LL << 27;")


def test_shared_runner_is_retired_when_a_candidate_leaks_device_memory(shared, monkeypatch):
    """A candidate that leaves device memory allocated keeps its own verdict, and the candidates
    after it continue in a fresh shared runner instead of inheriting the leak."""
    import cudaperf.sharedrunner as sr

    monkeypatch.setattr(sr, "chunk_size", lambda n, groups, slots: n)  # all three in one runner
    srcs = [LEAKS + "\n// m0\n", REF + "\n// m1\n", ZEROS + "\n// m2\n"]
    leak, c, zeros = shared.evaluate_many([(TASK, s) for s in srcs])
    assert (leak.status, c.status, zeros.status) == ("correct", "correct", "wrong")
    assert not any("note:shared_fallback" in r.flags for r in (leak, c, zeros))
    assert (leak.timings["shared_runner"], leak.timings["shared_position"]) == (3, 0)
    # the runner was retired after the leak: a fresh one took the two that were left
    assert (c.timings["shared_runner"], c.timings["shared_position"]) == (2, 0)
    assert (zeros.timings["shared_runner"], zeros.timings["shared_position"]) == (2, 1)
    # without a leak the three share one runner to the end
    a, b, z = shared.evaluate_many([(TASK, s) for s in (REF + "\n// n0\n", REF + "\n// n1\n", ZEROS + "\n// n2\n")])
    assert [r.timings["shared_position"] for r in (a, b, z)] == [0, 1, 2]


def test_runner_reuses_freed_host_buffers_without_leaking_their_bytes(tmp_path):
    """The runner keeps the host buffers of a freed perf-size layout for the next stage of that
    size (they are not faulted in and zeroed again). Their old bytes must never show: a stage
    reading other input files after a small layout computes on those files, and a poisoned output
    of a candidate that writes nothing comes back all poison, not the last run's results."""
    from cudaperf.hostemu import build_emulated_runner

    exe = build_emulated_runner(tmp_path)
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    def build(name, code):
        (tmp_path / f"{name}.c").write_text(code)
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", str(tmp_path / f"{name}.c"), "-o",
                        str(tmp_path / f"{name}.so")], check=True)
        return tmp_path / f"{name}.so"

    shim = build("shim", "void cudaperf_call(void *fn, void **a) {\n"
                         "  ((void (*)(void *, void *, void *))fn)(*(void **)a[0], *(void **)a[1], *(void **)a[2]);\n}\n")
    add = build("add", "void add(const float *a, const float *b, float *out) {\n"
                       "  for (int i = 0; i < 300000; i++) out[i] = a[i] + b[i];\n}\n")
    noop = build("noop", "void add(const float *a, const float *b, float *out) { (void)a; (void)b; (void)out; }\n")
    n = 300_000  # 1.2 MB per buffer: above the runner's smallest pooled size (1 MiB)
    rng = np.random.default_rng(0)

    def argfile(name, numel):
        d = scratch / name
        d.mkdir()
        arrays = {p: rng.random(numel, dtype=np.float32) for p in ("a", "b")}
        for p, arr in arrays.items():
            arr.tofile(d / f"{p}.bin")
        (scratch / f"{name}.args").write_text(f"P a in 4 {numel} {name}/a.bin -\nP b in 4 {numel} {name}/b.bin -\n"
                                              f"P out out 4 {numel} - ffffff7f\n")
        out = scratch / f"{name}_out"
        out.mkdir()
        (out / "out.bin").write_bytes(b"\0" * (4 * numel))
        return arrays

    first, second, _small = argfile("x", n), argfile("y", n), argfile("small", 1000)
    r = gpuworker.Runner(exe, gpu=None, scratch=scratch, uid=None,
                         limits=gpuworker.RunnerLimits(mem_bytes=8 << 30, run_timeout_s=30))
    try:
        assert r.request(f"init {r.stage(shim, 'shim.so')} 0").startswith("ok")
        assert r.request(f"load 1 {r.stage(add, 'add.so')} add") == "ok"
        assert r.request(f"load 2 {r.stage(noop, 'noop.so')} add") == "ok"

        def call(name, slot):
            for cmd in (f"stage {name}.args", "alloc", f"run {slot}"):
                rep = r.request(cmd)
                assert rep.startswith("ok"), (cmd, rep)
            assert r.request(f"store {name}_out") == "ok -"
            return np.fromfile(scratch / f"{name}_out" / "out.bin", dtype=np.float32)

        np.testing.assert_array_equal(call("x", 1), first["a"] + first["b"])
        call("small", 2)  # x's buffers go to the pool (slot 2 writes nothing: add assumes the big size)
        np.testing.assert_array_equal(call("y", 1), second["a"] + second["b"])  # x's buffers, y's bytes
        call("small", 2)
        got = call("y", 2).view(np.uint32)  # writes nothing: the poison, in a buffer that held sums
        assert (got == 0x7FFFFFFF).all()
    finally:
        r.close()


def _saxpy_task():
    """dev/saxpy_f32 (another signature than row_sum: a scalar and an inout buffer) at CPU sizes."""
    d = copy.deepcopy([t for t in dev_tasks() if t.task_id == "dev/saxpy_f32"][0].to_dict())
    d["task_id"] = "emu/saxpy_f32"
    for test in d["tests"]:
        if test.get("perf"):
            test["sizes"] = {"n": 200_003}
    return task_from_dict(d)


SAXPY = _saxpy_task()


@pytest.fixture()
def kept(emu):
    """The emulated harness with shared runners kept across tasks (up to 6 candidates each)."""
    import dataclasses

    old = emu.cfg
    emu._kept.close()  # no runner kept by an earlier test
    emu._kept = H.KeptRunners()
    emu.cfg = dataclasses.replace(old, share_runner=True, keep_runners=6)
    yield emu
    emu._kept.close()
    emu._kept = H.KeptRunners()
    emu.cfg = old


def test_kept_runner_serves_the_next_task_with_its_own_shim(kept):
    """A runner kept after row_sum's group judges saxpy's candidates (another call shim, other
    input files under the same test names) exactly as a fresh runner does, then row_sum's again."""
    (a,) = kept.evaluate_many([(TASK, REF + "\n// k0\n")])
    assert a.status == "correct" and a.timings["runner_reused"] == 0, (a.message, a.failures)
    s_ok, s_zero = kept.evaluate_many([(SAXPY, SAXPY.reference + "\n// k1\n"),
                                       (SAXPY, SAXPY.reference.replace("y[i] =", "y[i] = 0.0f *") + "\n// k1\n")])
    assert s_ok.status == "correct" and s_ok.pass_rate == 1.0, (s_ok.message, s_ok.failures)
    assert s_zero.status == "wrong", s_zero.message
    # 2 slots, one candidate each: one of them takes the kept runner, the other a fresh one
    assert sorted(r.timings["runner_reused"] for r in (s_ok, s_zero)) == [0, 1]
    assert s_ok.timings["shared_runner"] == 1
    assert s_ok.baseline_clean_ms > 0 and s_ok.speedup > 0
    b, z = kept.evaluate_many([(TASK, REF + "\n// k2\n"), (TASK, ZEROS + "\n// k2\n")])
    assert (b.status, z.status) == ("correct", "wrong"), (b.message, b.failures)
    assert max(b.timings["runner_reused"], z.timings["runner_reused"]) >= 1


def test_kept_runner_is_shut_down_after_a_death_a_leak_or_its_limit(kept, monkeypatch):
    import cudaperf.sharedrunner as sr

    monkeypatch.setattr(sr, "chunk_size", lambda n, groups, slots: n)  # one runner per task
    (a,) = kept.evaluate_many([(TASK, REF + "\n// s0\n")])
    seg, after = kept.evaluate_many([(TASK, SEGFAULT + "\n// s1\n"), (TASK, REF + "\n// s1\n")])
    assert seg.status == "crashed" and "note:shared_fallback" in seg.flags
    assert after.status == "correct" and after.timings["runner_reused"] == 0  # the kept one died: a fresh one
    (leak,) = kept.evaluate_many([(TASK, LEAKS + "\n// s2\n")])
    assert leak.status == "correct" and leak.timings["runner_reused"] == 1  # `after`'s runner, kept
    assert leak.timings["runner_retired"] == 1 and leak.timings["device_left_mb"] > sr.LEAK_LIMIT_BYTES / 2**20
    assert "runner_retired" not in after.timings and 0 <= after.timings["device_left_mb"] < 64
    (c,) = kept.evaluate_many([(SAXPY, SAXPY.reference + "\n// s3\n")])
    assert c.status == "correct" and c.timings["runner_reused"] == 0  # the leak retired it
    x = kept.evaluate_many([(TASK, REF + f"\n// s4 {i}\n") for i in range(5)])  # 1 + 5 = the limit of 6
    assert [r.timings["runner_reused"] for r in x] == [1] * 5
    (d,) = kept.evaluate_many([(TASK, REF + "\n// s5\n")])
    assert d.timings["runner_reused"] == 0  # shut down at its limit
    kept._kept.close()
    assert not kept._kept._idle
