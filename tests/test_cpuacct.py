"""cudaperf.cpuacct: CPU seconds per command during a run, from /proc."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cudaperf.cpuacct import ProcCpu

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")

BUSY = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.8: pass\n"


def test_a_busy_child_is_counted_under_its_command_and_earlier_cpu_is_not():
    comm = Path(f"/proc/{os.getpid()}/comm").read_text().strip()
    with ProcCpu(interval=0.05) as acct:
        subprocess.run([sys.executable, "-c", BUSY], check=True)
        time.sleep(0.2)
    by = acct.by_command()
    # the child ran 0.8 s of CPU under the interpreter's name (this process's own name too)
    assert by.get(comm, 0.0) >= 0.6, by
    assert by.get(comm, 0.0) < 5.0, "CPU used before the run was counted"
    tot = acct.self_and_children()
    assert tot["children_s"] >= 0.7 and tot["missed_children_s"] < 0.5, tot
    share = acct.machine_busy_share()
    assert share is not None and 0.0 < share <= 1.0  # one core spun for 0.8 s of the run


def test_an_idle_run_reports_almost_nothing_for_this_process():
    # per pid, not per command name: other processes named "python" may be busy on the machine
    # (session 15's CI run shared it with other Python jobs and saw 0.57 s under "python")
    with ProcCpu(interval=0.05) as acct:
        time.sleep(0.3)
    assert 0.0 <= acct.seconds_of(os.getpid()) < 0.2
    assert acct.self_and_children()["children_s"] == 0.0
