"""The native runner and its protocol, exercised for real on a CPU machine.

Without a GPU the runner's `init` reports a CUDA error but still drops privileges, so hostile
host code in library constructors (exit, hang, fork, printf flood) can be tested here: the
runner must report each as an outcome and leave nothing running behind.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import time
from pathlib import Path

import pytest

from cudaperf import gpuworker, sandbox
from cudaperf.devtasks import dev_tasks
from cudaperf.tasks import task_from_dict

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("gw-cache")


@pytest.fixture(scope="module")
def runner_bin(cache):
    return gpuworker.build_runner(cache)


def _gcc_lib(tmp: Path, name: str, code: str) -> Path:
    src = tmp / f"{name}.c"
    src.write_text(code)
    so = tmp / f"{name}.so"
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", str(src), "-o", str(so)], check=True)
    os.chmod(so, 0o755)
    gpuworker._open_path(so)
    return so


def _start(runner_bin, cache, tmp, uid, timeout=5.0, fsize=1 << 20):
    scratch = sandbox.make_scratch(tmp, uid=uid, prefix="gw-")
    limits = gpuworker.RunnerLimits(run_timeout_s=timeout, fsize_bytes=fsize)
    r = gpuworker.Runner(runner_bin, gpu=None, scratch=scratch, uid=uid, limits=limits)
    shim = r.stage(gpuworker.build_shim(dev_tasks()[0], cache), "shim.so")
    rep = r.request(f"init {shim} 0", timeout=60)
    assert rep.startswith("ok") or rep.startswith("cuda"), rep  # no GPU here: a CUDA error is fine
    return r


def _alive_of_uid(uid: int | None) -> list[int]:
    if uid is None:
        return []
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/status") as fh:
                    for ln in fh:
                        if ln.startswith("Uid:") and int(ln.split()[1]) == uid:
                            out.append(int(d))
            except OSError:
                pass
    return out


def test_shim_passes_every_argument_type(tmp_path, cache):
    """The per-signature shim calls the entry with exactly the C types of the signature."""
    rec = {
        "task_id": "t/mixed", "track": "c2cuda", "family": "f", "entry": "f",
        "signature": [
            {"name": "n", "ctype": "int", "role": "size"},
            {"name": "a", "ctype": "float", "role": "scalar"},
            {"name": "x", "ctype": "const float*", "role": "in", "shape": "n"},
            {"name": "d", "ctype": "double", "role": "scalar"},
            {"name": "k", "ctype": "long long", "role": "scalar"},
            {"name": "c", "ctype": "unsigned char", "role": "scalar"},
            {"name": "y", "ctype": "float*", "role": "out", "shape": "n"},
        ],
        "reference": "void f(){}", "tests": [{"name": "a", "sizes": {"n": 3}}],
    }
    task = task_from_dict(rec)
    shim = ctypes.CDLL(str(gpuworker.build_shim(task, cache)))
    lib = ctypes.CDLL(str(_gcc_lib(tmp_path, "mixed", r"""
        double got[7];
        void f(int n, float a, const float *x, double d, long long k, unsigned char c, float *y) {
            got[0] = n; got[1] = a; got[2] = (double)(long)x; got[3] = d; got[4] = (double)k;
            got[5] = c; got[6] = (double)(long)y; }""")))
    vals = [ctypes.c_int(7), ctypes.c_float(1.5), ctypes.c_void_p(4096), ctypes.c_double(-2.25),
            ctypes.c_longlong(1 << 40), ctypes.c_ubyte(200), ctypes.c_void_p(8192)]
    argv = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in vals])
    fn = ctypes.cast(lib.f, ctypes.c_void_p)
    shim.cudaperf_call(fn, argv)
    got = list((ctypes.c_double * 7).in_dll(lib, "got"))
    assert got == [7, 1.5, 4096, -2.25, float(1 << 40), 200, 8192]


def test_load_missing_symbol_and_bad_command(tmp_path, runner_bin, cache):
    so = _gcc_lib(tmp_path, "plain", "void other(void) {}")
    with sandbox.acquire_uid() as uid:
        with _start(runner_bin, cache, tmp_path, uid) as r:
            assert r.request(f"load 0 {r.stage(so, 'lib.so')} saxpy").startswith("err missing symbol")
            assert r.request("frobnicate").startswith("err unknown command")
            assert r.request("load 0 nope.so saxpy").startswith("err dlopen")


def test_load_refused_before_init(tmp_path, runner_bin):
    so = _gcc_lib(tmp_path, "plain2", "void saxpy(void) {}")
    scratch = sandbox.make_scratch(tmp_path, prefix="gw-")
    with gpuworker.Runner(runner_bin, gpu=None, scratch=scratch, uid=None,
                          limits=gpuworker.RunnerLimits(run_timeout_s=5)) as r:
        assert r.request(f"load 0 {r.stage(so, 'lib.so')} saxpy") == "err load before init"


@pytest.mark.parametrize("name,code,reason", [
    ("exit_at_load", "#include <stdlib.h>\n__attribute__((constructor)) static void c(void) { exit(0); }\n"
                     "void saxpy(void) {}", "exited"),
    ("abort_at_load", "#include <stdlib.h>\n__attribute__((constructor)) static void c(void) { abort(); }\n"
                      "void saxpy(void) {}", "exited"),
    ("hang_at_load", "#include <unistd.h>\n__attribute__((constructor)) static void c(void) { for(;;) sleep(1); }\n"
                     "void saxpy(void) {}", "timeout"),
])
def test_hostile_constructor_is_contained(tmp_path, runner_bin, cache, name, code, reason):
    so = _gcc_lib(tmp_path, name, code)
    with sandbox.acquire_uid() as uid:
        r = _start(runner_bin, cache, tmp_path, uid, timeout=3.0)
        t0 = time.monotonic()
        with pytest.raises(gpuworker.RunnerDied) as ei:
            r.request(f"load 0 {r.stage(so, 'lib.so')} saxpy")
        assert ei.value.reason == reason
        assert time.monotonic() - t0 < 10
        r.close()
        assert r.proc.poll() is not None
        assert _alive_of_uid(uid) == []


def test_closed_reply_channel_of_a_live_runner_is_the_candidates_fault(tmp_path, runner_bin, cache):
    """A candidate that closes the runner's pipes and keeps running (the host-side twin of
    tests/adversarial/reply_fd_close.cu) ends with a RunnerDied verdict; on the H100 in session 24
    the wait for the runner raised TimeoutExpired instead, an internal harness error that paid 0."""
    so = _gcc_lib(tmp_path, "closer", r"""
        #include <sys/stat.h>
        #include <unistd.h>
        __attribute__((constructor)) static void c(void) {
            for (int fd = 3; fd < 256; fd++) {
                struct stat st;
                if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) close(fd);
            }
            for (;;) sleep(1);
        }
        void saxpy(void) {}""")
    with sandbox.acquire_uid() as uid:
        r = _start(runner_bin, cache, tmp_path, uid, timeout=30)
        t0 = time.monotonic()
        with pytest.raises(gpuworker.RunnerDied) as ei:
            r.request(f"load 0 {r.stage(so, 'lib.so')} saxpy")
        assert ei.value.reason == "protocol" and "closed" in str(ei.value)
        assert time.monotonic() - t0 < 15
        r.close()
        assert r.proc.poll() is not None


def test_fork_in_constructor_cannot_speak_protocol_or_survive(tmp_path, runner_bin, cache):
    """A forked child returns into the runner but must exit at once; a setsid'd grandchild that
    sleeps forever must be killed when the runner is closed."""
    so = _gcc_lib(tmp_path, "forker", r"""
        #include <unistd.h>
        __attribute__((constructor)) static void c(void) {
            if (fork() == 0) { if (fork() == 0) { setsid(); for (;;) sleep(1); } }
        }
        void saxpy(void) {}""")
    with sandbox.acquire_uid() as uid:
        r = _start(runner_bin, cache, tmp_path, uid)
        assert r.request(f"load 0 {r.stage(so, 'lib.so')} saxpy") == "ok"
        assert r.request(f"load 1 {r.stage(so, 'lib1.so')} saxpy") == "ok"  # the protocol still works: one reply each
        r.close()
        if uid is not None:
            time.sleep(0.2)
            assert _alive_of_uid(uid) == [], [open(f"/proc/{p}/status").read()[:300] for p in _alive_of_uid(uid)]


def test_printf_flood_is_capped_and_runner_survives(tmp_path, runner_bin, cache):
    so = _gcc_lib(tmp_path, "flood", r"""
        #include <stdio.h>
        __attribute__((constructor)) static void c(void) {
            for (long i = 0; i < 20000000; i++) printf("flood flood flood flood %ld\n", i);
            fflush(stdout); }
        void saxpy(void) {}""")
    with sandbox.acquire_uid() as uid:
        r = _start(runner_bin, cache, tmp_path, uid, timeout=60, fsize=1 << 20)
        assert r.request(f"load 0 {r.stage(so, 'lib.so')} saxpy", timeout=60) == "ok"
        assert r.stdout_path.stat().st_size <= 1 << 20
        r.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="privilege drop needs root")
def test_candidate_runs_unprivileged(tmp_path, runner_bin, cache):
    """Host code of a candidate cannot write where the harness keeps private files."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    target = private / "pwned"
    so = _gcc_lib(tmp_path, "writer", f"""
        #include <stdio.h>
        #include <unistd.h>
        int wrote = 0, uid_seen = -1;
        __attribute__((constructor)) static void c(void) {{
            uid_seen = getuid();
            FILE *f = fopen("{target}", "w"); if (f) {{ fputs("x", f); fclose(f); wrote = 1; }} }}
        void saxpy(void) {{}}""")
    with sandbox.acquire_uid() as uid:
        with _start(runner_bin, cache, tmp_path, uid) as r:
            assert r.request(f"load 0 {r.stage(so, 'lib.so')} saxpy") == "ok"
    assert not target.exists()


def test_host_side_commands_without_a_gpu(tmp_path, runner_bin, cache):
    """stage (read inputs, build poison) and store are host-only, so the parent can keep them out
    of the GPU lock; they must reject bad argfiles and refuse to store results that were never
    produced. Device commands answer plainly without a GPU."""
    task = dev_tasks()[0]
    test = task.tests[0]
    from cudaperf import check
    from cudaperf.inputs import make_inputs

    with sandbox.acquire_uid() as uid:
        with _start(runner_bin, cache, tmp_path, uid) as r:
            scratch = r.scratch
            data_dir = scratch / "in"
            data_dir.mkdir()
            poison = {p.name: check.poison_bytes(p.dtype) for p in task.signature
                      if p.is_pointer and p.role == "out"}
            argfile = scratch / "args.txt"
            gpuworker.write_argfile(task, test, make_inputs(task, test, 0), data_dir, argfile, poison,
                                    relative_to=scratch)
            assert r.request("stage args.txt") == "ok"
            assert r.request("store out") == "err nothing run"
            assert r.request("alloc") == "err no gpu"
            assert r.request("reset") == "err no args"
            assert r.request("run 0") == "err no such slot"
            lines = argfile.read_text().splitlines()
            bad = scratch / "bad.txt"
            for text, err in [
                ("P x in 4 8 in/missing.bin -\n", "err cannot read in/missing.bin"),
                ("P x in 4 8 - -\n", "err input x without a data file"),
                ("P y out 4 8 - 000000\n", "err bad poison"),
                ("Q z\n", "err bad line kind Q"),
                ("S a q9 1\n", "err bad scalar code q9"),
                ("\n".join(lines[:1]) + "\nP y out 4\n", "err bad P line"),
            ]:
                bad.write_text(text)
                assert r.request("stage bad.txt") == err, text
            assert r.request("stage nope.txt") == "err cannot open argfile"


def test_request_stats_count_each_command():
    from cudaperf import gpuworker as G

    G.request_stats(reset=True)
    G._note_request("run", 0.25)
    G._note_request("run", 0.5)
    G._note_request("store", 0.125)
    st = G.request_stats(reset=True)
    assert st == {"run": {"count": 2, "seconds": 0.75}, "store": {"count": 1, "seconds": 0.125}}
    assert G.request_stats() == {}
