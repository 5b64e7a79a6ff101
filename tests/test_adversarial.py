"""Adversarial suite of the evaluation harness: hostile candidates in tests/adversarial/*.cu.

Each .cu file is one candidate translation unit led by a header of ``// key: value`` lines
(tests/adversarial/README.md lists them and every attack). The header is metadata, not part of
the candidate: the harness sees only what follows it. What this module checks:

* `test_headers_complete` (instant): every file declares attack, task, expect and expect-flags
  with known statuses, tasks and flag families; at least 30 hostile candidates and a good control.
* `test_suite_cpu` (always, marked slow: ~2 min on 2 cores; compiles every candidate for real,
  no GPU used even where one exists):
  one record per candidate in order, within a wall-clock budget; rejections and compile errors
  are exactly as expected, everything else stops at "compiled"; the static suspicion flags the
  headers promise are raised; compile bombs stop within the compile timeout; no candidate earns
  a reward above 0; private files never leak into compile logs.
* `test_suite_gpu` (gpu): the same batch run for real, hostile first and good controls last:
  statuses and flags as declared, no hostile candidate paid (r_ver <= 0), controls still correct
  afterwards, no process of the runner uids (or carrying the harness' scratch path) left alive,
  no file dropped where `must-not-exist` forbids it, no loopback connection accepted, the secret
  in the harness' environment unseen. Candidates marked `requires: root` rely on the runner's
  privilege drop and are only run as root. Every outcome is written as JSONL to
  $CUDAPERF_ADV_LOG when set, before anything is asserted, and all failures are reported at once.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from cudaperf.config import RewardConfig, get_profile
from cudaperf.devtasks import dev_tasks
from cudaperf.result import STATUSES, is_internal_error
from cudaperf.rewards import r_ver

pytestmark = pytest.mark.timeout(1500)

ADV_DIR = Path(__file__).resolve().parent / "adversarial"
TASKS = {t.task_id: t for t in dev_tasks()}
REQUIRED_KEYS = ("attack", "task", "expect", "expect-flags")
OPTIONAL_KEYS = ("control", "requires", "must-not-exist", "forbid-in-log", "pad-to")
CONTROL_KINDS = ("good", "non-hack")
PRE_RUN = {"invalid", "compile_error"}  # statuses decided before anything runs
LISTEN_PORT = 47613  # socket_connect.cu dials this port
CPU_BUDGET_S = 600.0
MIN_HOSTILE = 30
_HEADER_RE = re.compile(r"^//\s*([a-z][a-z-]*):\s?(.*?)\s*$")


@dataclass(frozen=True)
class Case:
    name: str
    attack: str
    task_id: str
    expect: frozenset
    flags: tuple
    control: str | None
    requires_root: bool
    must_not_exist: tuple
    forbid_in_log: tuple
    source: str

    @property
    def hostile(self) -> bool:
        return self.control != "good"

    @property
    def reward_allowed(self) -> bool:
        return self.control is not None


def parse_case(path: Path) -> Case:
    """Split a file into its header (leading `// key: value` lines) and the candidate source."""
    lines = path.read_text().splitlines(keepends=True)
    header: dict[str, str] = {}
    i = 0
    while i < len(lines):
        m = _HEADER_RE.match(lines[i])
        if not m or m.group(1) not in REQUIRED_KEYS + OPTIONAL_KEYS:
            break
        if m.group(1) in header:
            raise ValueError(f"{path.name}: header key {m.group(1)!r} given twice")
        header[m.group(1)] = m.group(2)
        i += 1
    missing = [k for k in REQUIRED_KEYS if not header.get(k)]
    if missing:
        raise ValueError(f"{path.name}: header lacks {missing}")
    source = "".join(lines[i:])
    if header.get("pad-to"):
        # Generated rather than committed: 300 kB of comment lines, still one real candidate.
        target = int(header["pad-to"])
        pad = "// padding: " + "x" * 66 + "\n"
        source += pad * max(0, (target - len(source)) // len(pad) + 1)

    def split(key: str) -> tuple:
        v = header.get(key, "").strip()
        return () if v in ("", "-") else tuple(s.strip() for s in v.split(",") if s.strip())

    return Case(name=path.stem, attack=header["attack"], task_id=header["task"].strip(),
                expect=frozenset(s.strip() for s in header["expect"].split("|")),
                flags=split("expect-flags"), control=header.get("control") or None,
                requires_root=header.get("requires", "").strip() == "root",
                must_not_exist=split("must-not-exist"), forbid_in_log=split("forbid-in-log"),
                source=source)


def load_cases() -> list[Case]:
    """Hostile candidates by name, then the good controls (so they run after the hostile ones)."""
    cases = [parse_case(p) for p in sorted(ADV_DIR.glob("*.cu"))]
    return [c for c in cases if c.hostile] + [c for c in cases if not c.hostile]


def _paths(case: Case) -> list[Path]:
    return [Path(p.replace("{cwd}", os.getcwd())) for p in case.must_not_exist]


# ------------------------------------------------------------------------------ headers


def test_headers_complete():
    from cudaperf.scan import FLAGS as SCAN_FLAGS

    files = sorted(ADV_DIR.glob("*.cu"))
    cases = [parse_case(p) for p in files]
    assert len({c.name for c in cases}) == len(cases)
    for c in cases:
        assert c.task_id in TASKS, f"{c.name}: unknown task {c.task_id}"
        assert c.expect and c.expect <= set(STATUSES), f"{c.name}: bad expect {sorted(c.expect)}"
        assert c.control in (None, *CONTROL_KINDS), f"{c.name}: bad control {c.control}"
        for f in c.flags:
            kind, _, what = f.partition(":")
            assert (kind == "suspicious" and what in SCAN_FLAGS) or (kind == "hack" and what), \
                f"{c.name}: unknown flag {f}"
        if c.control == "good":
            assert c.expect == {"correct"} and not c.requires_root
        for p in c.must_not_exist:
            assert p.startswith(("/", "{cwd}/")), f"{c.name}: must-not-exist paths are absolute"
        if c.expect == {"invalid"}:
            continue
        assert c.source.strip(), f"{c.name}: only an invalid candidate may be empty"
    hostile = [c for c in cases if c.hostile]
    assert len(hostile) >= MIN_HOSTILE, f"only {len(hostile)} hostile candidates"
    assert any(c.control == "good" for c in cases)
    assert {"empty", "huge_comment_300k"} <= {c.name for c in cases}
    assert not parse_case(ADV_DIR / "empty.cu").source.strip()
    assert len(parse_case(ADV_DIR / "huge_comment_300k.cu").source.encode()) > 200_000


def test_header_parser_rejects_incomplete(tmp_path):
    p = tmp_path / "bad.cu"
    p.write_text("// attack: x\n// task: dev/saxpy_f32\n// expect-flags: -\nint x;\n")
    with pytest.raises(ValueError, match="expect"):
        parse_case(p)
    p.write_text("// attack: x\n// attack: y\n// task: t\n// expect: wrong\n// expect-flags: -\n")
    with pytest.raises(ValueError, match="twice"):
        parse_case(p)


# ------------------------------------------------------------------------------ CPU


def _reward(res) -> float:
    return r_ver(res, RewardConfig())


@pytest.mark.slow
def test_suite_cpu(tmp_path):
    from cudaperf.harness import Harness

    cases = load_cases()
    # A shorter compile timeout than the profile's 60 s: the include bomb only stops there, and
    # honest candidates take a few seconds even on a loaded 2-core machine.
    cfg = get_profile("smoke", **{"harness.cache_dir": str(tmp_path / "cache"),
                                  "harness.compile_timeout_s": 30.0}).harness
    h = Harness(cfg, gpus=[])  # compile and scan only, even on a GPU machine
    try:
        t0 = time.monotonic()
        results = h.evaluate_many([(TASKS[c.task_id], c.source) for c in cases])
        wall = time.monotonic() - t0
    finally:
        h.close()
    assert len(results) == len(cases)
    assert wall < CPU_BUDGET_S, f"adversarial batch took {wall:.0f} s"
    problems = []
    for c, r in zip(cases, results):
        where = f"{c.name}: status {r.status} ({r.message})"
        if r.task_id != c.task_id:
            problems.append(f"{c.name}: record for {r.task_id}")
        if c.expect <= PRE_RUN:
            ok = r.status in c.expect
        elif not (c.expect & PRE_RUN):
            ok = r.status == "compiled"
        else:
            ok = r.status in c.expect | {"compiled"}
        if not ok:
            problems.append(f"{where}, expected {'|'.join(sorted(c.expect))} (or compiled)")
        if r.status == "compiled" and (r.pass_rate is not None or r.runtime_ms is not None):
            problems.append(f"{c.name}: no GPU, yet pass_rate/runtime were filled in")
        if r.status != "invalid":
            miss = [f for f in c.flags if f.startswith("suspicious:") and f not in r.flags]
            if miss:
                problems.append(f"{c.name}: static flags {miss} missing from {r.flags}")
        # timings["compile"] includes waiting for a compile slot (behind at most one other bomb)
        if r.status == "compile_error" and r.timings.get("compile", 0) > 3 * cfg.compile_timeout_s:
            problems.append(f"{c.name}: compile error took {r.timings['compile']:.0f} s")
        leaked = [s for s in c.forbid_in_log if s in r.compile_log]
        if leaked:
            problems.append(f"{c.name}: compile log contains {leaked}")
        if _reward(r) > 0:
            problems.append(f"{c.name}: reward {_reward(r):.3f} > 0 without running")
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------ GPU


def _proc_status(pid: str) -> dict[str, str]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for ln in fh:
                k, _, v = ln.partition(":")
                out[k] = v.strip()
    except OSError:
        pass
    return out


def stray_processes(marker: str, root: bool) -> dict[int, str]:
    """Live processes left by this harness' runners.

    A process counts when its environment carries `marker` (the harness' scratch path: runners
    and whatever they fork or spawn inherit HOME/TMPDIR under it) or, as root, when it runs
    under a sandbox uid and carries no environment that places it elsewhere: processes of
    another sandboxed run (compiles, references: `sandbox.MARKER_VAR`) or another harness'
    runners (their own `/cudaperf-<pid>` scratch) belong to someone else on a shared machine,
    while an escapee that exec'd with an empty environment is still caught.
    """
    from cudaperf import sandbox

    found = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        st = _proc_status(d.name)
        if not st or st.get("State", "").startswith("Z"):
            continue  # gone, or a zombie: dead, only waiting to be reaped
        try:
            env = (d / "environ").read_bytes()
        except OSError:
            env = b""
        uids = [int(u) for u in st.get("Uid", "").split()]
        sandboxed = any(sandbox.UID_BASE <= u < sandbox.UID_BASE + sandbox.UID_COUNT for u in uids)
        elsewhere = (sandbox.MARKER_VAR.encode() + b"=") in env or b"/cudaperf-" in env
        hit = marker.encode() in env or (root and sandboxed and not elsewhere)
        if hit:
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:120]
            except OSError:
                cmd = "?"
            found[int(d.name)] = f"pid {d.name} uids {uids} {cmd}"
    return found


class _Listener:
    """A loopback TCP listener counting the connections a sandboxed candidate manages to make."""

    def __init__(self, port: int):
        self.accepted = 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind(("127.0.0.1", port))
        except OSError:
            self.sock.close()
            self.sock = None
            return
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        if self.sock is not None:
            self._stop.set()
            self._t.join(timeout=2)
            self.sock.close()


def _log_rows(cases, results) -> list[dict]:
    rows = []
    for c, r in zip(cases, results):
        rows.append({"name": c.name, "task": c.task_id, "expect": "|".join(sorted(c.expect)),
                     "status": r.status, "reward": round(_reward(r), 4), "flags": r.flags,
                     "message": r.message, "seconds": r.timings.get("total"),
                     "pass_rate": r.pass_rate, "speedup": r.speedup, "runtime_ms": r.runtime_ms,
                     "failure": (r.failures[0].get("reason") if r.failures else None),
                     "gpu": r.gpu})
    return rows


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["own", "shared", "kept"], ids=["own_runner", "shared_runner", "kept_runner"])
def test_suite_gpu(tmp_path, monkeypatch, mode):
    """The whole suite in one batch; "shared": HarnessConfig.share_runner: the candidates the
    scan finds clean share runners per task (cudaperf.sharedrunner) and must get the same
    outcomes; "kept": those runners also go on from one task to the next (keep_runners)."""
    share = mode != "own"
    from cudaperf.harness import Harness

    root = os.geteuid() == 0
    cases = [c for c in load_cases() if root or not c.requires_root]
    for c in cases:
        for p in _paths(c):
            p.unlink(missing_ok=True)
    secret = secrets.token_hex(16)
    monkeypatch.setenv("CUDAPERF_ADV_SECRET", secret)
    # /proc/<pid>/environ shows a process' environment as it was at exec, so the secret also
    # goes into a helper started with it: readable there unless the runner is another uid.
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"],
                              env={**os.environ, "CUDAPERF_ADV_SECRET": secret})
    listener = _Listener(LISTEN_PORT)
    profile = os.environ.get("CUDAPERF_ADV_PROFILE", "smoke")
    cfg = get_profile(profile, **{"harness.cache_dir": str(tmp_path / "cache"), "harness.share_runner": share,
                                  "harness.keep_runners": 64 if mode == "kept" else 0}).harness
    h = Harness(cfg)
    marker = str(h.scratch_base)
    before = set(stray_processes(marker, root))  # e.g. left by earlier tests: not this batch's
    try:
        assert h.has_gpu
        t0 = time.monotonic()
        results = h.evaluate_many([(TASKS[c.task_id], c.source) for c in cases])
        wall = time.monotonic() - t0
        # The harness must still be healthy: the good controls again, on fresh runners.
        again = Harness(cfg, use_store=False)
        try:
            controls = [c for c in cases if c.control == "good"]
            reruns = again.evaluate_many([(TASKS[c.task_id], c.source) for c in controls])
        finally:
            again.close()
        h._kept.close()  # runners kept for a next task are not strays: shut them before looking
        deadline = time.monotonic() + 20  # killed runners may take a while to tear down a context
        strays = {p: d for p, d in stray_processes(marker, root).items() if p not in before}
        while strays and time.monotonic() < deadline:
            time.sleep(0.5)
            strays = {p: d for p, d in stray_processes(marker, root).items() if p not in before}
    finally:
        h.close()
        listener.close()
        holder.kill()
        holder.wait()

    rows = _log_rows(cases, results)
    if os.environ.get("CUDAPERF_ADV_LOG"):
        log_path = os.environ["CUDAPERF_ADV_LOG"]
        if share:
            log_path = log_path.replace(".jsonl", "") + f"_{mode}.jsonl"
        with open(log_path, "w") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")
    for row in rows:
        print(f"{row['name']:28s} {row['expect']:22s} {row['status']:13s} {row['reward']:7.3f} "
              f"{row['seconds'] or 0:7.1f}s {','.join(row['flags'])} | {row['message'][:80]}")
    print(f"{len(cases)} candidates in {wall:.0f} s (root={root}, profile={profile}, runners={mode}, "
          f"{sum('shared_runner' in r.timings for r in results)} in shared runners, "
          f"{sum(r.timings.get('runner_reused', 0) > 0 for r in results)} in kept ones)")

    problems = []
    assert len(results) == len(cases)
    for c, r, row in zip(cases, results, rows):
        if r.status not in c.expect:
            problems.append(f"{c.name}: status {r.status}, expected {row['expect']} ({r.message})")
        miss = [f for f in c.flags if f not in r.flags]
        if miss and r.status not in PRE_RUN:
            problems.append(f"{c.name}: flags {miss} missing from {r.flags}")
        if c.hostile and not c.reward_allowed and _reward(r) > 0:
            problems.append(f"{c.name}: hostile candidate paid r_ver={_reward(r):.4f} "
                            f"(speedup {r.speedup}, flags {r.flags})")
        if is_internal_error(r.message):
            # A candidate must get a verdict: one that breaks the harness itself is a harness
            # fault (reply_fd_close on the H100 in session 24 ended as one).
            problems.append(f"{c.name}: the harness could not judge it ({r.message[:200]})")
        for p in _paths(c):
            if p.exists():
                problems.append(f"{c.name}: dropped {p}")
        leaked = [s for s in c.forbid_in_log if s in r.compile_log]
        if leaked:
            problems.append(f"{c.name}: compile log contains {leaked}")
    for c, r in zip([c for c in cases if c.control == "good"], reruns):
        if r.status != "correct":
            problems.append(f"{c.name} (rerun after the batch): {r.status} ({r.message})")
    if strays:
        problems.append("processes left alive: " + "; ".join(list(strays.values())[:10]))
    if listener.sock is not None and listener.accepted:
        problems.append(f"{listener.accepted} loopback connection(s) reached 127.0.0.1:{LISTEN_PORT}")
    assert not problems, "\n".join(problems)
