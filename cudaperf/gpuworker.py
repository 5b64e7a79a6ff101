"""GPU worker processes: the trusted native runner (runner/runner.cpp) driven over a pipe protocol.

What this module guarantees to the harness:
  * Untrusted candidate libraries are only ever loaded inside a runner process started through
    `cudaperf.sandbox` (own session, rlimits, scrubbed environment, own scratch directory, and, when
    the harness runs as root, an unprivileged uid of its own and no network).
  * Every request has a watchdog: a reply that does not come within its time limit, a runner whose
    resident memory passes the limit, or a runner that dies, raises `RunnerDied` with a reason;
    the runner's whole process tree (and every process of its uid) is killed, never left behind.
  * The runner never sees reference outputs: it gets input files and writes output files; the
    parent compares.

The runner binary and the per-signature call shims are built once per toolchain and cached.
"""
from __future__ import annotations

import hashlib
import os
import select
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from cudaperf import sandbox
from cudaperf.tasks import Param, Task, TestConfig

RUNNER_SRC = Path(__file__).with_name("runner") / "runner.cpp"

# Scalar type codes understood by the runner and the C type the shim declares for each.
_SCALAR_CODES = {
    "float32": ("f32", "float"), "float64": ("f64", "double"),
    "int8": ("i8", "signed char"), "uint8": ("u8", "unsigned char"),
    "int16": ("i16", "short"), "uint16": ("u16", "unsigned short"),
    "int32": ("i32", "int"), "uint32": ("u32", "unsigned int"),
    "int64": ("i64", "long long"), "uint64": ("u64", "unsigned long long"),
    "bool": ("b", "_Bool"),
}

_STATS_MU = threading.Lock()
_REQUEST_STATS: dict[str, list[float]] = {}


def _note_request(verb: str, seconds: float) -> None:
    with _STATS_MU:
        st = _REQUEST_STATS.setdefault(verb[:16], [0, 0.0])
        st[0] += 1
        st[1] += seconds


def request_stats(reset: bool = False) -> dict[str, dict[str, float]]:
    """Runner requests of this process by command (stage, alloc, run, store, time, ...): how many
    and the seconds spent waiting for their replies, summed over threads -- where runner time goes."""
    with _STATS_MU:
        out = {k: {"count": int(n), "seconds": round(sec, 3)} for k, (n, sec) in sorted(_REQUEST_STATS.items())}
        if reset:
            _REQUEST_STATS.clear()
    return out


class RunnerDied(RuntimeError):
    """The runner process died, hung, or exceeded a limit; `reason` is a short machine tag."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


def _toolchain_tag() -> str:
    try:
        from cudaperf.compile import toolchain_id

        return toolchain_id()
    except Exception:  # compile.py unavailable: fall back to the nvcc path
        return shutil.which("nvcc") or "nvcc"


def build_runner(cache_dir: str | Path) -> Path:
    """Compile the runner once per (source, toolchain); returns the cached binary."""
    src = RUNNER_SRC.read_bytes()
    key = hashlib.sha256(src + _toolchain_tag().encode()).hexdigest()[:16]
    out = Path(cache_dir) / "runner" / key / "cudaperf_runner"
    return _cached_build(out, lambda tmp: ["nvcc", "-O2", "-x", "cu", str(RUNNER_SRC), "-o", str(tmp),
                                           "-cudart", "shared", "-ldl"], "the runner", 300)


def _cached_build(out: Path, command, what: str, timeout: int, source: str | None = None) -> Path:
    """`sandbox.cached_build`, then opened up for the runner uid (dirs a+x, file a+r)."""
    return sandbox.cached_build(out, command, what, timeout, source=source, open_up=_open_path)


def shim_signature(task: Task) -> str:
    """Type string of the entry's parameters: 'p' for pointers, a scalar code otherwise."""
    return " ".join("p" if p.is_pointer else _SCALAR_CODES[p.dtype.name][0] for p in task.signature)


def build_shim(task: Task, cache_dir: str | Path) -> Path:
    """A tiny trusted C library that calls `fn` with the task's exact C parameter types.

    The runner cannot call an arbitrary C signature by itself; one shim per distinct signature
    (cached) does it with the compiler's own calling convention, for any number and mix of args.
    """
    ctypes_ = []
    for p in task.signature:
        ctypes_.append("void*" if p.is_pointer else _SCALAR_CODES[p.dtype.name][1])
    decl = ", ".join(ctypes_) or "void"
    call = ", ".join(f"*({t}*)a[{i}]" for i, t in enumerate(ctypes_))
    code = (f"void cudaperf_call(void *fn, void **a) {{\n"
            f"  ((void (*)({decl}))fn)({call});\n}}\n")
    key = hashlib.sha256(code.encode()).hexdigest()[:16]
    out = Path(cache_dir) / "shims" / f"shim_{key}.so"
    src = out.with_suffix(".c")
    return _cached_build(out, lambda tmp: ["gcc", "-O2", "-shared", "-fPIC", str(src), "-o", str(tmp)],
                         "the call shim", 60, source=code)


def _open_path(path: Path) -> None:
    """Make a trusted artefact readable by the unprivileged runner uid (dirs a+x, file a+r)."""
    p = path.resolve()
    os.chmod(p, os.stat(p).st_mode | 0o444)
    for d in list(p.parents)[:-1]:
        try:
            os.chmod(d, os.stat(d).st_mode | 0o111)
        except PermissionError:
            break


# ------------------------------------------------------------------------------- argument files


def scalar_literal(p: Param, value) -> str:
    v = np.asarray(value, dtype=p.dtype).item()
    if p.dtype.kind == "f":
        return repr(float(v))
    return str(int(v))


def write_argfile(task: Task, test: TestConfig, inputs: dict, data_dir: Path, argfile: Path,
                  poison: dict[str, bytes], relative_to: Path | None = None) -> None:
    """Describe one call: pointer buffers (with their input file) and scalar values.

    Input arrays are written to `data_dir` inside the runner's scratch directory; with
    `relative_to` (the scratch dir) the argfile names them relative to it.
    """
    lines = []
    for p in task.signature:
        if p.is_pointer:
            n = task.numel(p, test)
            data = "-"
            if p.role in ("in", "inout"):
                f = data_dir / f"{p.name}.bin"
                if not f.exists():
                    arr = np.ascontiguousarray(inputs[p.name], dtype=p.dtype)
                    assert arr.size == n, (p.name, arr.size, n)
                    arr.tofile(f)
                    os.chmod(f, 0o644)
                # Relative to the runner's cwd when asked: the runner overmounts /dev/shm and /tmp
                # with private tmpfs, and only its cwd keeps the original scratch directory.
                data = str(f.relative_to(relative_to)) if relative_to else str(f)
            pz = poison.get(p.name)
            lines.append(f"P {p.name} {p.role} {p.dtype.itemsize} {n} {data} "
                         f"{pz.hex() if pz else '-'}")
        else:
            code = _SCALAR_CODES[p.dtype.name][0]
            lines.append(f"S {p.name} {code} {scalar_literal(p, inputs[p.name])}")
    argfile.write_text("\n".join(lines) + "\n")


# ------------------------------------------------------------------------------- the runner


@dataclass
class RunnerLimits:
    run_timeout_s: float = 10.0
    mem_bytes: int = 16 << 30  # resident memory watchdog
    fsize_bytes: int = 64 << 20
    nproc: int = 512  # counts threads of the runner's uid (CUDA starts several)
    cpu_s: int = 600


class Runner:
    """One runner process. Use as a context manager; `close()` always kills what it started."""

    def __init__(self, binary: Path | None, *, gpu: int | None, scratch: Path, uid: int | None,
                 limits: RunnerLimits, command: list[str] | None = None, env_extra: dict | None = None):
        """`binary`: the native runner, which drops to `uid` itself after creating its CUDA
        context (and isolates network and /tmp). `command` instead: any program speaking the
        same protocol (the torch worker); the launcher then drops it to `uid` and gives it no
        network before it starts."""
        self.scratch = scratch
        self.uid = uid
        self.limits = limits
        self.device: str | None = None
        self.cc: str | None = None
        self.l2_bytes = 0
        sandbox.become_subreaper()  # orphans of candidate forks come to us, so we can reap them
        cmd_r, cmd_w = os.pipe()
        rep_r, rep_w = os.pipe()
        # The runner expects commands on fd 3 and replies on fd 4.
        env = sandbox.scrubbed_env({"CUDA_VISIBLE_DEVICES": "" if gpu is None else str(gpu),
                                    "CUDA_DEVICE_ORDER": "PCI_BUS_ID", **(env_extra or {})}, home=str(scratch))
        lim = sandbox.Limits(cpu_s=limits.cpu_s, mem_bytes=None, fsize_bytes=limits.fsize_bytes,
                             nproc=limits.nproc)
        # No RLIMIT_AS: CUDA reserves far more virtual memory than it uses; a resident-memory
        # watchdog (request()) bounds memory instead. The runner drops privileges itself.
        self.stdout_path = scratch / "stdout.txt"
        self.stderr_path = scratch / "stderr.txt"
        if command is None:
            cmd = [str(binary)] + (["--uid", str(uid)] if uid is not None else [])
        else:
            cmd = list(command)

        # Move the pipe ends above the protocol numbers first so that the launcher's dup2 onto
        # 3 and 4 cannot clobber one with the other.
        spare = []
        hi_r, hi_w = os.dup(cmd_r), os.dup(rep_w)
        while hi_r <= 4 or hi_w <= 4:
            spare += [hi_r, hi_w]
            hi_r, hi_w = os.dup(hi_r), os.dup(hi_w)
        for fd in spare:
            os.close(fd)
        argv = sandbox.launch_argv(cmd, lim, dups=((hi_r, 3), (hi_w, 4)),
                                   drop_to_uid=uid if command is not None else None,
                                   isolate_net=command is not None)
        with open(self.stdout_path, "wb") as so, open(self.stderr_path, "wb") as se:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=so, stderr=se,
                                         cwd=scratch, env=env, pass_fds=(hi_r, hi_w), close_fds=True)
        for fd in (cmd_r, rep_w, hi_r, hi_w):
            os.close(fd)
        self._cmd = os.fdopen(cmd_w, "w", buffering=1)
        self._rep = rep_r
        self._buf = b""

    def stage(self, path: str | Path, name: str) -> str:
        """Copy a library into the scratch dir and return the name the runner should open.

        The runner sees /tmp, /var/tmp and /dev/shm as private empty tmpfs, and everything it
        opens is named relative to its cwd (the scratch dir), wherever the caches live.
        """
        dst = self.scratch / name
        shutil.copyfile(path, dst)
        os.chmod(dst, 0o755)
        return f"./{name}"  # dlopen searches library paths for a bare name: make it a path

    # -- protocol
    def request(self, line: str, timeout: float | None = None) -> str:
        t0 = time.monotonic()
        try:
            return self._request(line, timeout)
        finally:
            _note_request(line.split(" ", 1)[0], time.monotonic() - t0)

    def _request(self, line: str, timeout: float | None) -> str:
        timeout = self.limits.run_timeout_s if timeout is None else timeout
        try:
            self._cmd.write(line + "\n")
            self._cmd.flush()
        except (BrokenPipeError, OSError):
            raise RunnerDied("exited", self._exit_detail()) from None
        deadline = time.monotonic() + timeout
        # poll, not select: select() refuses descriptors >= 1024, which a verification run
        # with dozens of workers, pipes and prefetched inputs reaches (H200, session 6).
        poller = select.poll()
        poller.register(self._rep, select.POLLIN | select.POLLHUP | select.POLLERR)
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RunnerDied("timeout", f"no reply to {line.split()[0]!r} within {timeout:.0f} s")
            if not poller.poll(min(left, 0.05) * 1000):
                if self.proc.poll() is not None:
                    raise RunnerDied("exited", self._exit_detail())
                rss = self._rss()
                if rss > self.limits.mem_bytes:
                    raise RunnerDied("memory", f"resident memory {rss >> 20} MiB over the limit")
                continue
            chunk = os.read(self._rep, 65536)
            if not chunk:
                # EOF: the runner exited, or its candidate closed the reply pipe and the runner
                # lives on (tests/adversarial/reply_fd_close.cu). Either is a verdict on the
                # candidate, never a harness error: a TimeoutExpired from here was judged an
                # internal error and paid 0 instead of a crash's penalty (H100, session 24).
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    raise RunnerDied("protocol", "the reply channel was closed while the runner still ran") from None
                raise RunnerDied("exited", self._exit_detail())
            self._buf += chunk
            if len(self._buf) > 1 << 20:
                raise RunnerDied("protocol", "oversized reply")
        line_out, self._buf = self._buf.split(b"\n", 1)
        return line_out.decode("utf-8", "replace")

    def _rss(self) -> int:
        try:
            with open(f"/proc/{self.proc.pid}/status") as fh:
                for ln in fh:
                    if ln.startswith("VmRSS:"):
                        return int(ln.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def _exit_detail(self) -> str:
        rc = self.proc.poll()
        if rc is None:
            return "runner stopped answering"
        if rc < 0:
            try:
                return f"killed by signal {signal.Signals(-rc).name}"
            except ValueError:
                return f"killed by signal {-rc}"
        return f"exited with status {rc}"

    def output_tail(self, n: int = 2000) -> str:
        parts = []
        for p in (self.stdout_path, self.stderr_path):
            try:
                with open(p, "rb") as fh:
                    fh.seek(0, 2)
                    size = fh.tell()
                    fh.seek(max(0, size - n))
                    txt = fh.read().decode("utf-8", "replace").strip()
                if txt:
                    parts.append(txt)
            except OSError:
                pass
        return "\n".join(parts)

    def quit(self, wait_s: float = 1.0) -> bool:
        """Ask the runner to quit and wait up to `wait_s` for it to exit; True when it did.
        The parent calls this under the GPU lock (a context teardown is GPU work), then `close`
        outside it when the runner exited by itself."""
        try:
            self._cmd.write("quit\n")
            self._cmd.flush()
        except (OSError, ValueError):
            pass
        # Wait, but do not reap it yet: while the leader is an unreaped zombie its pid (= the
        # session id) cannot be reused, so the sweep in `close` can only hit the runner's own
        # session, uid and reparented orphans.
        end = time.monotonic() + wait_s
        while True:
            try:
                if os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    return True
            except ChildProcessError:
                return True
            if time.monotonic() >= end:
                return False
            time.sleep(0.005)

    def close(self) -> None:
        self.quit()
        sandbox.kill_tree(self.proc.pid, None, self.uid)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for f in (self._cmd,):
            try:
                f.close()
            except OSError:
                pass
        try:
            os.close(self._rep)
        except OSError:
            pass

    def __enter__(self) -> "Runner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
