"""Sandbox primitives against real hostile C programs (compiled with gcc here, run on the CPU)."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from cudaperf import sandbox
from cudaperf.sandbox import Limits, is_alive, run_limited, scrubbed_env

ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="uid drop and RLIMIT_NPROC need root")

PROGRAMS = {
    "sleeper": r"""
#include <unistd.h>
int main(void) { for (;;) sleep(1); }
""",
    # parent exits at once; a grandchild escapes into its own session and lingers
    "escaper": r"""
#include <stdio.h>
#include <unistd.h>
int main(void) {
    pid_t c = fork();
    if (c == 0) {
        setsid();
        pid_t g = fork();
        if (g == 0) {
            FILE *f = fopen("grandchild.pid", "w"); fprintf(f, "%d\n", getpid()); fclose(f);
            for (;;) sleep(1);
        }
        for (;;) sleep(1);
    }
    for (int i = 0; i < 200; i++) { if (access("grandchild.pid", F_OK) == 0) break; usleep(10000); }
    usleep(50000);
    return 0;
}
""",
    "hog": r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    for (int i = 0; i < 64; i++) {
        char *p = malloc(64 << 20);
        if (!p) { printf("malloc failed at %d\n", i); return 3; }
        memset(p, 1, 64 << 20);
    }
    printf("allocated everything\n");
    return 0;
}
""",
    "bigfile": r"""
#include <stdio.h>
#include <string.h>
int main(void) {
    static char buf[1 << 20]; memset(buf, 'x', sizeof buf);
    FILE *f = fopen("big.bin", "wb");
    for (int i = 0; i < 100; i++) fwrite(buf, 1, sizeof buf, f);
    fclose(f);
    return 0;
}
""",
    "flood": r"""
#include <stdio.h>
int main(void) { for (long i = 0; i < 2000000; i++) printf("line %ld of a flood\n", i); return 0; }
""",
    "forkbomb": r"""
#include <unistd.h>
int main(void) { for (;;) fork(); }
""",
}


@pytest.fixture(scope="module")
def bins() -> dict[str, str]:
    # under the system temp dir, not pytest's 0700 one: the dropped uid must reach them
    d = Path(tempfile.mkdtemp(prefix="sbx-bins-"))
    os.chmod(d, 0o755)
    out = {}
    for name, src in PROGRAMS.items():
        c = d / f"{name}.c"
        c.write_text(src)
        subprocess.run(["gcc", "-O1", "-o", str(d / name), str(c)], check=True)
        out[name] = str(d / name)
    yield out
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def box():
    with sandbox.acquire_uid() as uid:
        d = sandbox.make_scratch(uid=uid)
        try:
            yield d, uid
        finally:
            sandbox.cleanup_scratch(d)


def _lim(**kw) -> Limits:
    base = dict(cpu_s=10, mem_bytes=1 << 30, fsize_bytes=16 << 20, nproc=64)
    base.update(kw)
    return Limits(**base)


def _uid_procs(uid: int) -> list[int]:
    return [p for p in sandbox._pids() if sandbox._proc_uid(p) == uid and is_alive(p)]


def test_sleeper_is_timed_out_and_killed(bins, box):
    d, uid = box
    t0 = time.monotonic()
    r = run_limited([bins["sleeper"]], cwd=d, timeout_s=1.0, limits=_lim(), env=scrubbed_env(home=str(d)),
                    drop_to_uid=uid)
    assert r.timed_out and r.signal == signal.SIGKILL
    assert 0.9 < r.seconds < 5 and time.monotonic() - t0 < 8
    if uid is not None:
        assert _uid_procs(uid) == []


@pytest.mark.parametrize("drop", [True, False])
def test_setsid_grandchild_does_not_survive(bins, box, drop):
    d, uid = box
    r = run_limited([bins["escaper"]], cwd=d, timeout_s=10, limits=_lim(), env=scrubbed_env(home=str(d)),
                    drop_to_uid=uid if drop else None)
    assert r.returncode == 0 and not r.timed_out, r.describe() + r.stderr
    gpid = int((d / "grandchild.pid").read_text())
    assert not is_alive(gpid), f"grandchild {gpid} survived (drop={drop})"


def test_memory_hog_hits_limit(bins, box):
    d, uid = box
    r = run_limited([bins["hog"]], cwd=d, timeout_s=20, limits=_lim(mem_bytes=256 << 20),
                    env=scrubbed_env(home=str(d)), drop_to_uid=uid)
    assert r.returncode == 3 and "malloc failed" in r.stdout, r.stdout + r.describe()


def test_huge_file_stopped_by_fsize(bins, box):
    d, uid = box
    r = run_limited([bins["bigfile"]], cwd=d, timeout_s=20, limits=_lim(fsize_bytes=2 << 20),
                    env=scrubbed_env(home=str(d)), drop_to_uid=uid)
    assert r.signal == signal.SIGXFSZ, r.describe()
    assert (d / "big.bin").stat().st_size <= 2 << 20


def test_printf_flood_output_is_capped(bins, box):
    d, uid = box
    r = run_limited([bins["flood"]], cwd=d, timeout_s=20, limits=_lim(fsize_bytes=256 << 20),
                    env=scrubbed_env(home=str(d)), drop_to_uid=uid, output_cap=4096)
    assert r.returncode == 0
    assert len(r.stdout) < 4096 + 200 and "bytes cut" in r.stdout
    assert r.stdout.startswith("line 0 of a flood") and "line 1999999 of a flood" in r.stdout


@needs_root
def test_fork_bomb_is_contained_and_cleaned(bins, box):
    d, uid = box
    t0 = time.monotonic()
    r = run_limited([bins["forkbomb"]], cwd=d, timeout_s=1.5, limits=_lim(nproc=24, cpu_s=5),
                    env=scrubbed_env(home=str(d)), drop_to_uid=uid)
    assert r.timed_out
    assert time.monotonic() - t0 < 15
    assert _uid_procs(uid) == []
    # no zombies of the bomb left on us either
    me = os.getpid()
    assert not [p for p in sandbox._pids() if (st := sandbox._proc_stat(p)) and st[1] == me and st[0] == "Z"
                and sandbox._proc_uid(p) == uid]


def test_env_has_no_inherited_secret(box, monkeypatch):
    d, uid = box
    monkeypatch.setenv("SECRET_TOKEN", "hunter2-do-not-leak")
    env = scrubbed_env({"CUDA_VISIBLE_DEVICES": "0"}, home=str(d))
    assert "SECRET_TOKEN" not in env and env["HOME"] == str(d) and env["TMPDIR"] == str(d)
    assert env["CUDA_CACHE_PATH"].startswith(str(d)) and env["CUDA_VISIBLE_DEVICES"] == "0"
    path = env["PATH"].split(":")
    assert "/usr/bin" in path and "/bin" in path
    nvcc = subprocess.run(["bash", "-c", "command -v nvcc"], capture_output=True, text=True).stdout.strip()
    if nvcc:
        assert os.path.dirname(nvcc) in path
    r = run_limited(["/usr/bin/env"], cwd=d, timeout_s=10, limits=_lim(), env=env, drop_to_uid=uid)
    assert r.returncode == 0 and "hunter2" not in r.stdout and "SECRET_TOKEN" not in r.stdout
    assert f"HOME={d}" in r.stdout


@needs_root
def test_uid_drop_confines_writes(box, tmp_path):
    d, uid = box
    protected = tmp_path / "protected"
    protected.mkdir()
    os.chmod(protected, 0o755)
    script = f"id -u; id -G; touch {protected}/x && echo WROTE; touch ok && echo SCRATCH_OK"
    r = run_limited(["/bin/sh", "-c", script], cwd=d, timeout_s=10, limits=_lim(),
                    env=scrubbed_env(home=str(d)), drop_to_uid=uid)
    lines = r.stdout.split()
    assert lines[0] == str(uid) and lines[1] == str(uid)  # no supplementary root group
    assert "WROTE" not in r.stdout and not (protected / "x").exists()
    assert "SCRATCH_OK" in r.stdout and (d / "ok").stat().st_uid == uid


@needs_root
def test_kill_uid_and_distinct_slots(tmp_path):
    with sandbox.acquire_uid() as a, sandbox.acquire_uid() as b:
        assert a != b and a >= sandbox.UID_BASE and b >= sandbox.UID_BASE
        p = subprocess.Popen(["sleep", "60"], user=a, group=a, extra_groups=[])
        q = subprocess.Popen(["sleep", "60"], user=b, group=b, extra_groups=[])
        try:
            sandbox.kill_uid(a)
            assert p.wait(timeout=5) == -signal.SIGKILL
            assert q.poll() is None  # another slot's process is untouched
        finally:
            q.kill()
            q.wait()


def test_cpu_limit(box):
    d, uid = box
    r = run_limited(["/bin/sh", "-c", "while :; do :; done"], cwd=d, timeout_s=20, limits=_lim(cpu_s=1),
                    env=scrubbed_env(home=str(d)), drop_to_uid=uid)
    assert not r.timed_out and r.signal in (signal.SIGXCPU, signal.SIGKILL) and r.seconds < 10


def test_stdin_and_missing_binary(box):
    d, uid = box
    r = run_limited(["/bin/cat"], cwd=d, timeout_s=10, limits=_lim(), env=scrubbed_env(home=str(d)),
                    stdin_bytes=b"hello sandbox", drop_to_uid=uid)
    assert r.ok and r.stdout == "hello sandbox"
    with pytest.raises(OSError):
        run_limited([str(Path(d) / "does-not-exist")], cwd=d, timeout_s=5, limits=_lim(),
                    env=scrubbed_env(home=str(d)), drop_to_uid=uid)


@needs_root
def test_isolate_net_leaves_only_loopback(box):
    d, uid = box
    r = run_limited(["/bin/cat", "/proc/net/dev"], cwd=d, timeout_s=10, limits=_lim(),
                    env=scrubbed_env(home=str(d)), drop_to_uid=uid, isolate_net=True)
    assert r.ok, r.describe() + r.stderr
    ifaces = [ln.split(":")[0].strip() for ln in r.stdout.splitlines()[2:]]
    assert ifaces == ["lo"]


def test_sweep_scan_in_c_lists_the_same_processes_as_python():
    """`sbxexec --sweep` (the C scan a run's cleanup uses) finds a run's processes by session and
    by environment marker exactly as the Python fallback does, zombies included."""
    import subprocess
    import time

    marker = b"CUDAPERF_TEST_MARK=scan123"
    by_session = subprocess.Popen(["sleep", "30"], start_new_session=True)
    by_marker = subprocess.Popen(["sleep", "30"], env={"PATH": "/usr/bin:/bin", "CUDAPERF_TEST_MARK": "scan123"})
    quick = subprocess.Popen(["true"], start_new_session=True)
    try:
        time.sleep(0.3)  # `quick` is a zombie now (not reaped yet)
        for sid, want in ((by_session.pid, {by_session.pid}), (quick.pid, {quick.pid})):
            c = sandbox._scan(sid, None, None)
            assert c is not None and {p for p, _, _ in c} == want
            assert sorted(c) == sorted(sandbox._scan_py(sid, None, None))
        c = sandbox._scan(999_999_999, marker, None)
        assert c is not None and [p for p, _, _ in c] == [by_marker.pid]
        assert sorted(c) == sorted(sandbox._scan_py(999_999_999, marker, None))
        assert dict((p, s) for p, s, _ in sandbox._scan(quick.pid, None, None))[quick.pid] == "Z"
    finally:
        for p in (by_session, by_marker, quick):
            p.kill()
            p.wait()
