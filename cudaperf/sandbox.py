"""Primitives for running untrusted processes (model-written CUDA, its compiler, references).

Threat model
------------
Protects against, for every process started with `run_limited`:

* runaway wall time (watchdog kill of the whole tree), CPU time (RLIMIT_CPU), address space
  (RLIMIT_AS), file size (RLIMIT_FSIZE: an oversized write, a printf flood into the captured
  stdout included, ends the process with SIGXFSZ -- ignoring SIGXFSZ cannot be arranged
  for the child because `subprocess` restores it to the default before exec, and a
  handler would not survive exec anyway), open files (RLIMIT_NOFILE), core dumps (RLIMIT_CORE 0);
* fork bombs: RLIMIT_NPROC bounds the process count (enforced by the kernel only for a
  non-root uid, hence the uid drop below), and every process of the run is killed afterwards;
* stray children: the command runs in a new session; after it exits or times out, its process
  group, every process still in its session, every process carrying this run's marker in its
  environment and (when a uid was dropped to) every process of that uid is SIGKILLed and, where
  it is our child, reaped. The caller becomes a child subreaper (prctl) so that orphans of the
  sandboxed tree are reparented to it, not to an init that may never reap them (this machine's
  pid 1 does not); `run_limited` reaps only processes it killed itself;
* writes outside the scratch dir and reads of private files, *when running as root*: the child
  drops to an unprivileged uid/gid (61000 + slot, no supplementary groups) that owns only its
  scratch dir; `acquire_uid` hands out slots with file locks so that concurrent threads and
  processes never share one, which makes `kill_uid` safe;
* inherited secrets: the child sees only `scrubbed_env` (PATH, HOME, TMPDIR, LANG,
  CUDA_CACHE_PATH, LD_LIBRARY_PATH with the CUDA library dirs, plus what the caller adds).

Does NOT protect against:

* a same-uid attacker when not running as root (it can ptrace or signal the caller, read its
  files, and escape the session; the environment marker is then a best-effort sweep, and
  RLIMIT_NPROC counts all processes of the user, so it is set relative to the current count);
* world-writable places (/tmp, /dev/shm) stay writable for the dropped uid;
* kernel exploits, side channels, GPU-side interference (another process' memory, clocks,
  a hung GPU context) -- GPU isolation is the worker pool's business;
* network access, unless ``isolate_net=True`` and the caller is root (a fresh network
  namespace via unshare(CLONE_NEWNET) with only a downed loopback).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import functools
import glob
import hashlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

UID_BASE = 61000
UID_COUNT = 2000
OUTPUT_CAP = 64 * 1024  # bytes of stdout / stderr kept (head and tail)
MARKER_VAR = "CUDAPERF_SANDBOX_RUN"
_LOCK_DIR = Path(tempfile.gettempdir()) / "cudaperf-uid-locks"

# --------------------------------------------------------------------------- environment


@functools.lru_cache(maxsize=None)  # asked at every sandboxed start; the toolkit does not move
def _cuda_roots() -> tuple[Path, ...]:
    roots: list[Path] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            roots.append(Path(os.environ[var]))
    nvcc = shutil.which("nvcc")
    if nvcc:
        # /usr/local/bin/nvcc may be a wrapper; the real one's parent is the toolkit root
        roots.append(Path(os.path.realpath(nvcc)).parent.parent)
        roots.append(Path(nvcc).parent.parent)
    roots.append(Path("/usr/local/cuda"))
    out: list[Path] = []
    for r in roots:
        r = Path(os.path.realpath(r))
        if r.is_dir() and r not in out:
            out.append(r)
    return tuple(out)


def cuda_bin_dirs() -> list[str]:
    """Directories holding nvcc (the wrapper's and the toolkit's)."""
    return list(_cuda_bin_dirs())


@functools.lru_cache(maxsize=None)
def _cuda_bin_dirs() -> tuple[str, ...]:
    dirs: list[str] = []
    nvcc = shutil.which("nvcc")
    if nvcc:
        dirs.append(str(Path(nvcc).parent))
    for r in _cuda_roots():
        if (r / "bin" / "nvcc").exists():
            dirs.append(str(r / "bin"))
    return tuple(dict.fromkeys(dirs))


def cuda_lib_dirs() -> list[str]:
    """CUDA runtime library dirs found on this machine (toolkit and pip `nvidia-*` wheels)."""
    return list(_cuda_lib_dirs())


@functools.lru_cache(maxsize=None)  # globbing site-packages at every runner start added up
def _cuda_lib_dirs() -> tuple[str, ...]:
    cands: list[str] = []
    for r in _cuda_roots():
        cands += [str(r / "lib64"), *glob.glob(str(r / "targets" / "*" / "lib"))]
    for sp in sys.path:  # pip wheels (torch/cupy) ship libcudart under site-packages/nvidia
        if sp.endswith("site-packages"):
            cands += glob.glob(os.path.join(sp, "nvidia", "*", "lib"))
            cands += glob.glob(os.path.join(sp, "nvidia", "cu*", "lib"))
    found = [d for d in cands if glob.glob(os.path.join(d, "libcudart.so*"))]
    return tuple(dict.fromkeys(os.path.realpath(d) for d in found))


def scrubbed_env(extra: dict | None = None, *, home: str) -> dict:
    """A minimal environment: nothing of the caller's (tokens, keys) is inherited.

    `extra` is added last and may override; pass e.g. CUDA_VISIBLE_DEVICES there.
    """
    home = str(home)
    path = [*cuda_bin_dirs(), "/usr/local/bin", "/usr/bin", "/bin"]
    env = {
        "PATH": ":".join(dict.fromkeys(path)),
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "CUDA_CACHE_PATH": os.path.join(home, ".nv", "ComputeCache"),
        # numpy in reference runners must not reserve one BLAS arena per core
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    libs = cuda_lib_dirs()
    if libs:
        env["LD_LIBRARY_PATH"] = ":".join(libs)
    if extra:
        env.update({str(k): str(v) for k, v in extra.items()})
    return env


# --------------------------------------------------------------------------- limits


@dataclass
class Limits:
    """Per-process resource limits; None leaves a limit as inherited."""

    cpu_s: float | None
    mem_bytes: int | None
    fsize_bytes: int | None
    nproc: int | None
    nofile: int | None = 256
    core: int | None = 0


@dataclass
class RunOutcome:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    signal: int | None  # the signal that ended the command, if any
    seconds: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def describe(self) -> str:
        if self.timed_out:
            return f"timed out after {self.seconds:.1f} s"
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = str(self.signal)
            hint = {"SIGXFSZ": " (file size limit)", "SIGXCPU": " (CPU time limit)",
                    "SIGKILL": " (killed: limit or watchdog)"}.get(name, "")
            return f"killed by {name}{hint}"
        return f"exit code {self.returncode}"




LAUNCHER_SRC = Path(__file__).with_name("runner") / "sbxexec.c"
_build_lock = threading.Lock()


def cached_build(out: Path, command: Callable[[Path], list[str]], what: str, timeout: int,
                 source: str | None = None, open_up: Callable[[Path], None] | None = None) -> Path:
    """Build a trusted artefact once: `command(tmp_path)` writes it, then it is renamed into place
    (atomic, so concurrent builders never load half a file); `open_up(out)` runs after."""
    with _build_lock:
        if out.exists():
            return out
        out.parent.mkdir(parents=True, exist_ok=True)
        if source is not None:
            out.with_suffix(".c").write_text(source)
        tmp = out.with_name(out.name + f".tmp{os.getpid()}")
        r = subprocess.run(command(tmp), capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"building {what} failed:\n{r.stderr[-4000:]}")
        os.chmod(tmp, 0o755)
        tmp.rename(out)
        if open_up is not None:
            open_up(out)
    return out


def private_dir(where: str = "") -> Path:
    """A directory only this user can write (`where`, or one per user under the temp dir), for
    trusted binaries the harness builds and then runs or loads: refuses one others could swap."""
    base = Path(where or Path(tempfile.gettempdir()) / f"cudaperf-sbx-{os.geteuid()}")
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = base.stat()
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise RuntimeError(f"{base} is not a private directory of this user: refusing to build or load trusted binaries in it")
    return base


def launcher() -> Path:
    """The C launcher (runner/sbxexec.c), built once per source into a private per-user dir.

    Why a launcher: the harness is multi-threaded, and Python code run between fork and exec (a
    preexec_fn, os.fork) can deadlock on a lock another thread held, leaving a child that never
    execs and still holds copies of our descriptors (the GPU timing lock among them). Spawning
    the launcher needs no Python in the child; it applies session, namespace, limits and uid in C.
    """
    where = os.environ.get("CUDAPERF_LAUNCHER_DIR") or ""
    known = _LAUNCHERS.get(where)
    if known is not None and known.exists():  # asked at every sandboxed start: check once
        return known
    digest = hashlib.sha256(LAUNCHER_SRC.read_bytes()).hexdigest()[:16]
    _LAUNCHERS[where] = cached_build(private_dir(where) / digest / "sbxexec",
                                     lambda tmp: ["gcc", "-O2", "-o", str(tmp), str(LAUNCHER_SRC)],
                                     "the sandbox launcher", 120)
    return _LAUNCHERS[where]


_LAUNCHERS: dict[str, Path] = {}


def launch_argv(cmd: Sequence[str], limits: Limits, *, drop_to_uid: int | None = None, isolate_net: bool = False,
                dups: Sequence[tuple[int, int]] = ()) -> list[str]:
    """argv that runs `cmd` through the launcher: new session, optional network namespace,
    rlimits, descriptor moves (from, to), then the uid drop (root only), then exec."""
    is_root = os.geteuid() == 0
    argv = [str(launcher()), "--setsid"]
    if isolate_net and is_root:
        argv.append("--netns")
    # soft CPU limit sends SIGXCPU; the hard one a second later is SIGKILL
    cpu = None if limits.cpu_s is None else max(1, int(limits.cpu_s + 0.999))
    for name, value, hard_extra in (("cpu", cpu, 1), ("as", limits.mem_bytes, 0), ("fsize", limits.fsize_bytes, 0),
                                    ("nofile", limits.nofile, 0), ("core", limits.core, 0),
                                    ("nproc", limits.nproc, 0)):
        if value is not None:
            argv += ["--rlimit", f"{name}={int(value)}:{int(value) + hard_extra}"]
    for src, dst in dups:
        argv += ["--dup", f"{int(src)}:{int(dst)}"]
    if drop_to_uid is not None and is_root:
        argv += ["--uid", str(int(drop_to_uid))]
    return argv + ["--", *cmd]


# --------------------------------------------------------------------------- process table


def _proc_stat(pid: int) -> tuple[str, int, int, int] | None:
    """(state, ppid, pgrp, session) from /proc/<pid>/stat, or None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read().decode("latin-1")
    except OSError:
        return None
    rest = data[data.rfind(")") + 2:].split()  # the command name may contain spaces and ')'
    return rest[0], int(rest[1]), int(rest[2]), int(rest[3])


def _proc_uid(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def is_alive(pid: int) -> bool:
    """True when pid exists and is not a zombie (a zombie has ended; it only awaits reaping)."""
    st = _proc_stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def _has_marker(pid: int, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return marker in fh.read()
    except OSError:
        return False


_SUBREAPER_DONE = False


def become_subreaper() -> bool:
    """Make this process the reaper of orphaned descendants (Linux prctl); idempotent."""
    global _SUBREAPER_DONE
    if _SUBREAPER_DONE:
        return True
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        _SUBREAPER_DONE = libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except OSError:
        _SUBREAPER_DONE = False
    return _SUBREAPER_DONE


def _reap_children(pids: Sequence[int], deadline_s: float = 2.0) -> None:
    """Reap those of `pids` that are (now) our children, waiting briefly for them to die."""
    me = os.getpid()
    pending = set(pids)
    end = time.monotonic() + deadline_s
    while pending and time.monotonic() < end:
        for pid in list(pending):
            st = _proc_stat(pid)
            if st is None:
                pending.discard(pid)
                continue
            if st[1] != me:
                if st[0] in ("Z", "X"):
                    pending.discard(pid)  # someone else's zombie to reap
                continue
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pending.discard(pid)
                continue
            if done:
                pending.discard(pid)
        if pending:
            time.sleep(0.005)


def kill_uid(uid: int) -> None:
    """SIGKILL every process owned by `uid` (the launcher setuid()s to it and kills -1).

    kill(-1) walks the task list under a lock that fork also needs, so a fork bomb cannot
    add members while it runs. No-op unless running as root, and refused for uid 0.
    """
    if os.geteuid() != 0 or uid is None or uid <= 0:
        return
    # The launcher, not os.fork(): no Python runs in a child of this multi-threaded process.
    try:
        subprocess.run([str(launcher()), "--kill-uid", str(int(uid))], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True, timeout=30)
    except subprocess.TimeoutExpired:  # never block the caller; the sweep that follows retries
        print(f"cudaperf.sandbox: kill_uid({uid}) did not finish in 30 s", file=sys.stderr)


def _scan(sid: int, marker: bytes | None, uid: int | None) -> list[tuple[int, str, int]] | None:
    """Kill `uid`'s processes (root), then (pid, state, ppid) of every process of the run: in
    session or group `sid`, owned by `uid`, or carrying `marker` in its environment. One C
    launcher call (`sbxexec --sweep`): the scan's hundreds of /proc reads stay out of this
    multi-threaded interpreter. None when the launcher could not do it."""
    try:
        out = subprocess.run([str(launcher()), "--sweep", str(int(sid)), str(-1 if uid is None else int(uid)),
                              marker.decode() if marker else "-"], stdin=subprocess.DEVNULL,
                             capture_output=True, close_fds=True, timeout=30)
    except (OSError, RuntimeError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    rows = []
    for line in out.stdout.decode("latin-1").splitlines():
        f = line.split()
        if len(f) == 6:
            rows.append((int(f[0]), f[1], int(f[2])))
    return rows


def _scan_py(sid: int, marker: bytes | None, uid: int | None) -> list[tuple[int, str, int]]:
    """`_scan` in Python (the launcher unavailable): same rows, slower under thread contention."""
    if uid is not None:
        kill_uid(uid)
    rows = []
    for pid in _pids():
        if pid == 1:
            continue
        st = _proc_stat(pid)
        if st is None:
            continue
        if st[3] == sid or st[2] == sid or (uid is not None and _proc_uid(pid) == uid) or (
                marker is not None and _has_marker(pid, marker)):
            rows.append((pid, st[0], st[1]))
    return rows


def _run_rows(sid: int, marker: bytes | None, uid: int | None) -> list[tuple[int, str, int]]:
    """`_scan`, or `_scan_py` when the launcher could not do it."""
    rows = _scan(sid, marker, uid)
    return _scan_py(sid, marker, uid) if rows is None else rows


def _sweep(sid: int, marker: bytes | None, uid: int | None) -> None:
    """Kill everything that belongs to one run; repeat until the run has no live members.

    The leader (pid == sid) is killed but left for its Popen to reap, which keeps its status.
    A run that ended cleanly costs one launcher call: kill the uid, list the run's processes
    (none live; its zombies are reaped from the same list).
    """
    me = os.getpid()
    killed: set[int] = set()
    rows: list[tuple[int, str, int]] | None = None
    for _ in range(50):
        try:
            os.killpg(sid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        rows = _run_rows(sid, marker, uid)
        members = [pid for pid, state, _ in rows if pid != me and state not in ("Z", "X")]
        if not members:
            break
        for pid in members:
            try:
                os.kill(pid, signal.SIGSTOP)  # freeze first so a forker cannot outrun us
            except (ProcessLookupError, PermissionError):
                pass
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        killed.update(members)
        _reap_children([p for p in members if p != sid], deadline_s=0.5)
        rows = None
    if rows is None:  # gave up with members alive: look once more for what died meanwhile
        rows = _run_rows(sid, marker, uid)
    # reap orphans of the run that were reparented to us (we are a subreaper)
    strays = [pid for pid, state, ppid in rows if ppid == me and state == "Z"]
    _reap_children([p for p in killed | set(strays) if p != sid], deadline_s=2.0)


# --------------------------------------------------------------------------- uid slots


@contextmanager
def acquire_uid(base: int = UID_BASE, count: int = UID_COUNT) -> Iterator[int | None]:
    """Hold an unprivileged uid slot (an flock per uid, so threads and processes never share).

    Yields None when not root: there is nothing to drop to.
    """
    if os.geteuid() != 0:
        yield None
        return
    _LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
    start = (os.getpid() * 7 + threading.get_ident()) % count  # spread contention
    for i in range(count):
        uid = base + (start + i) % count
        fd = os.open(_LOCK_DIR / f"{uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            kill_uid(uid)  # a previous holder that crashed may have left processes behind
            yield uid
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        return
    raise RuntimeError(f"no free sandbox uid in {base}..{base + count - 1}")


# --------------------------------------------------------------------------- scratch


def make_scratch(base: str | Path | None = None, *, uid: int | None = None, prefix: str = "sbx-") -> Path:
    """A fresh private directory (0700); owned by `uid` when root drops to it."""
    base = Path(base) if base is not None else Path(tempfile.gettempdir())
    base.mkdir(parents=True, exist_ok=True)
    d = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    os.chmod(d, 0o700)
    if uid is not None and os.geteuid() == 0:
        os.chown(d, uid, uid)
    return d


def cleanup_scratch(path: str | Path) -> None:
    """Remove a scratch dir, whatever modes the sandboxed process left on its contents."""
    remove_path(path)


def remove_path(path: str | Path) -> None:
    """Remove a file or a directory tree, whatever modes the sandboxed process left on it."""
    path = Path(path)

    def onerror(func, p, exc):  # noqa: ANN001 - shutil's callback signature
        try:
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
            func(p)
        except OSError:
            pass

    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    elif path.exists():
        shutil.rmtree(path, onerror=onerror)


@contextmanager
def scratch(base: str | Path | None = None, *, uid: int | None = None, keep: bool = False) -> Iterator[Path]:
    d = make_scratch(base, uid=uid)
    try:
        yield d
    finally:
        if not keep:
            cleanup_scratch(d)


def accessible_to_others(path: str | Path, *, execute: bool = False) -> bool:
    """Whether an unrelated unprivileged uid can read (and, optionally, execute) `path`.

    Used to decide whether a command can run under a dropped uid at all: e.g. a Python
    interpreter living under a 0700 /root cannot, so such a run keeps the caller's uid.
    """
    real = Path(os.path.realpath(path))
    try:
        for d in list(real.parents)[::-1]:
            if not os.stat(d).st_mode & 0o001:
                return False
        mode = os.stat(real).st_mode
    except OSError:
        return False
    return bool(mode & 0o004) and (not execute or bool(mode & 0o001))


# --------------------------------------------------------------------------- running


def _read_capped(fh, cap: int) -> str:  # noqa: ANN001
    fh.flush()
    size = os.fstat(fh.fileno()).st_size
    fh.seek(0)
    if size <= cap:
        data = fh.read(cap)
    else:
        half = cap // 2
        head = fh.read(half)
        fh.seek(size - half)
        tail = fh.read(half)
        data = head + f"\n[... {size - 2 * half} bytes cut ...]\n".encode() + tail
    return data.decode("utf-8", errors="replace")


def _user_process_count() -> int:
    uid = os.geteuid()
    return sum(1 for p in _pids() if _proc_uid(p) == uid)


def run_limited(cmd: list[str], *, cwd: str | Path, timeout_s: float, limits: Limits, env: dict,
                stdin_bytes: bytes | None = None, drop_to_uid: int | None = None,
                pass_fds: Sequence[int] = (), output_cap: int = OUTPUT_CAP,
                isolate_net: bool = False) -> RunOutcome:
    """Run `cmd` under `limits` in a new session, kill its whole tree afterwards, always reap.

    stdout/stderr go to files in `cwd` and are read back capped (head + tail) so that an
    output flood costs neither memory nor more disk than RLIMIT_FSIZE.
    """
    become_subreaper()
    cwd = Path(cwd)
    uid = drop_to_uid if os.geteuid() == 0 else None
    if limits.nproc is not None and uid is None:
        # without a private uid RLIMIT_NPROC counts every process of this user
        limits = Limits(**{**limits.__dict__, "nproc": limits.nproc + _user_process_count()})
    token = secrets.token_hex(8)
    env = {**env, MARKER_VAR: token}
    marker = f"{MARKER_VAR}={token}".encode()
    out_f = tempfile.TemporaryFile(dir=cwd, prefix=".stdout-")
    err_f = tempfile.TemporaryFile(dir=cwd, prefix=".stderr-")
    stdin = subprocess.DEVNULL
    if stdin_bytes is not None:  # a file, not a pipe: a child that never reads cannot block us
        stdin = tempfile.TemporaryFile(dir=cwd, prefix=".stdin-")
        stdin.write(stdin_bytes)
        stdin.seek(0)
    t0 = time.monotonic()
    timed_out = False
    try:
        if shutil.which(cmd[0], path=env.get("PATH")) is None:  # as Popen would have said
            raise FileNotFoundError(f"{cmd[0]}: not found on the sandbox PATH")
        argv = launch_argv(cmd, limits, drop_to_uid=uid, isolate_net=isolate_net)
        proc = subprocess.Popen(argv, cwd=str(cwd), env=env, stdin=stdin, stdout=out_f, stderr=err_f,
                                close_fds=True, pass_fds=tuple(pass_fds), restore_signals=True)
    except BaseException:
        out_f.close()
        err_f.close()
        raise
    finally:
        if stdin is not subprocess.DEVNULL:
            stdin.close()
    try:
        # wait without reaping: while the leader is a zombie its pid (= pgid = sid) cannot be
        # reused, so killing the group/session afterwards cannot hit a stranger
        delay = 0.001
        deadline = t0 + timeout_s
        while True:
            info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if info is not None and info.si_pid:
                break
            if time.monotonic() >= deadline:
                timed_out = True
                break
            time.sleep(delay)
            delay = min(delay * 2, 0.02)
        seconds = time.monotonic() - t0
    finally:
        _sweep(proc.pid, marker, uid)
        proc.wait()
    rc = proc.returncode
    sig = -rc if rc < 0 else None
    stdout = _read_capped(out_f, output_cap)
    stderr = _read_capped(err_f, output_cap)
    out_f.close()
    err_f.close()
    return RunOutcome(returncode=rc, stdout=stdout, stderr=stderr, timed_out=timed_out, signal=sig,
                      seconds=seconds)


def kill_tree(sid: int, marker: bytes | None = None, uid: int | None = None) -> None:
    """Public form of the post-run sweep: kill and reap a session, a marker and/or a uid.

    Call it while the session leader is still unreaped (e.g. after `os.waitid(..., WNOWAIT)`)
    so its pid, hence the session id, cannot have been reused.
    """
    _sweep(sid, marker, uid)
