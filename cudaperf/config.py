"""Typed run profiles (smoke / mini / paper) and the reward coefficients of DESIGN.md §1.

One code path, three sizes: every notebook and CLI takes a profile name and reads every size,
limit and coefficient from here, so changing scale never means changing code. Each field carries
a help string (TRL's habit) that `describe()` renders as a table.

Guarantees: `get_profile(name, **overrides)` returns a frozen, fully populated `Profile`;
unknown profile names and unknown override keys raise `ConfigError` listing what is allowed.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any

PROFILE_NAMES = ("smoke", "mini", "paper")
# Bytes overwritten between timed repetitions when flush_l2 is on: over twice the H200's 60 MB L2
# (the runner reports the real L2 size; any buffer over twice the largest L2 in use evicts it).
L2_FLUSH_BYTES = 256 << 20


class ConfigError(ValueError):
    """Unknown profile, unknown override, or a value of the wrong type."""


def _f(default: Any, help: str) -> Any:  # noqa: A002 - mirrors TRL's `help` metadata
    """A dataclass field with a help string; mutable defaults are deep-copied per instance.
    Shared by every settings dataclass (config, policy, grpo)."""
    if isinstance(default, (list, dict, set)):
        return field(default_factory=lambda: copy.deepcopy(default), metadata={"help": help})
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class RewardConfig:
    """Verifiable reward R_ver and structural reward R_str (DESIGN §1; paper's defaults)."""

    alpha_comp: float = _f(3.0, "Penalty for a candidate that does not compile: R_comp = -alpha_comp.")
    alpha_wrong: float = _f(2.0, "Penalty scale for wrong outputs: R_corr = -alpha_wrong * (1 - pass_rate).")
    alpha_speed: float = _f(1.0, "Scale of the speed reward: R_speed = alpha_speed * clip(log2 S, s_min, s_max).")
    s_min: float = _f(-0.5, "Lower clip of log2 speedup in R_speed.")
    s_max: float = _f(4.0, "Upper clip of log2 speedup in R_speed (4.0 = 16x).")
    alpha_cv: float = _f(1.0, "Penalty on timing instability: R_cv = -alpha_cv * cv (cv as a fraction).")
    cv_statistic: str = _f("robust", "Which CV R_cv reads: 'robust' (interquartile range / 1.349 / median of the timed runs, "
                                     "harness.robust_cv; the classic one where a record has no robust value) or "
                                     "'classic' (std / mean). Robust: under load one disturbed run of 20 made "
                                     "29 % of the dataset's correct variants show a classic CV above 1.")
    w_ver: float = _f(1.0, "Weight of R_ver in the GRPO objective (0 disables it: the 'R_str only' ablation).")
    w_str: float = _f(1.0, "Weight of R_str in the GRPO objective (0 disables it: the 'R_ver only' ablation).")
    str_gate: str = _f("correct", "When R_str is paid: 'correct' (only p = 1, as DESIGN §1), 'compiled', or 'always'.")
    compile_only_reward: float = _f(0.0, "Reward for a compiled candidate when no GPU can run it (smoke profile on CPU).")

    def __post_init__(self) -> None:
        if self.cv_statistic not in ("robust", "classic"):  # said here, not at the first correct candidate
            raise ValueError(f"cv_statistic must be 'robust' or 'classic', not {self.cv_statistic!r}")


@dataclass(frozen=True)
class HarnessConfig:
    """Compile, check and time (DESIGN §3-§4)."""

    arch: str = _f("auto", "nvcc target, e.g. 'sm_90' for the H200; 'auto' detects the GPU, else sm_90.")
    nvcc_flags: tuple = _f(("-O3", "-std=c++17"), "Extra nvcc flags for every candidate.")
    compile_timeout_s: float = _f(60.0, "Wall-clock limit of one nvcc run.")
    run_timeout_s: float = _f(10.0, "Watchdog per runner request (a load, a checked call); timing gets 4x. "
                                    "A hung kernel holds its GPU this long, so keep it short.")
    worker_mem_gb: float = _f(16.0, "Address-space limit of a worker process (GiB); CUDA reserves a lot of virtual memory.")
    worker_fsize_mb: float = _f(64.0, "Largest file a worker may write (MiB): caps printf floods.")
    warmup: int = _f(3, "Untimed calls before timing.")
    reps: int = _f(20, "Timed repetitions; the median is the runtime, their CV the stability.")
    flush_l2: bool = _f(True, "Overwrite a buffer twice the L2 size between repetitions.")
    check_seeds: int = _f(2, "Input seeds per test (references cached per task, test, seed). Checks draw one at "
                             "random; the recheck after timing always uses another, so 2 already defeats caching.")
    recheck: bool = _f(True, "Check correctness again on fresh inputs after timing (catches candidates that cache "
                             "or keep state). Off only for trusted code (dataset verification: with check_seeds=1 "
                             "it halves the perf-size references, the costliest CPU work); records then have no "
                             "'recheck' timing.")
    spot_check: bool = _f(True, "Check the outputs of one timed call, picked at random per candidate (poisoned before, "
                                "copied back after, outside the timed interval): a candidate that skips work while "
                                "timed fails. Off for tasks with in/out buffers (repeated calls change them).")
    share_runner: bool = _f(False, "Candidates of one task that the static scan finds clean (no flag at all) share a "
                                   "runner process, one after another, instead of a runner each: one CUDA context per "
                                   "group (the driver creates ~4.5 per second on the H200). Same checks, timing and "
                                   "spot check per candidate; anything flagged, and anything that goes wrong, gets a "
                                   "runner of its own (cudaperf.sharedrunner).")
    keep_runners: int = _f(0, "With share_runner: a shared runner that ended its task's group normally is kept for "
                              "the next task's group (its call shim swapped, its scratch emptied) until it has judged "
                              "this many candidates; 0 = a fresh runner per group. Saves a CUDA context per task "
                              "(cudaperf.keptrunners says what a kept runner may carry over and why that is safe).")
    init_lock: bool = _f(False, "Hold the GPU lock shared while a runner creates its CUDA context (init), so no timed "
                                "region overlaps a context creation. Off since session 9 (timed regions waited for "
                                "the inits in flight); on to test whether context creations beside timed regions "
                                "cause the single slow repetitions behind the classic CV's spikes (harness.robust_cv).")
    internal_retries: int = _f(1, "A record the harness could not judge because of its own error (no GPU memory "
                                  "left for a runner, a runner that would not start) is judged again this many "
                                  "times, one at a time, after the batch; 0 = never.")
    roofline_slack: float = _f(0.8, "Flag a runtime below slack * (min bytes / copy bandwidth) as impossible.")
    gpus: str = _f("all", "GPUs for evaluation workers: 'all', or a comma list of indices (e.g. '1' to keep GPU 0 for training).")
    compile_jobs: int = _f(0, "Parallel nvcc jobs; 0 = all CPU cores.")
    modelnew_require_kernel: bool = _f(True, "KernelBench ModelNew candidates must build a custom kernel with "
                                       "load_inline; False admits pure-PyTorch ModelNew (e.g. the reference itself, "
                                       "to check the harness says speedup ~1).")
    cache_dir: str = _f(".cache/cudaperf", "Compile cache, reference outputs and the result store.")


@dataclass(frozen=True)
class DataConfig:
    """Which tasks a profile touches."""

    tasks_path: str = _f("data/tasks/c2cuda.jsonl.gz", "C->CUDA task file (JSONL, optionally gzipped) or directory.")
    max_tasks: int = _f(0, "Use at most this many tasks (0 = all); smoke takes a stratified slice.")
    families: tuple = _f((), "Restrict to these families (empty = all).")
    seed: int = _f(0, "Seed for slicing and splits.")


@dataclass(frozen=True)
class Profile:
    name: str = _f("smoke", "Profile name: smoke | mini | paper.")
    description: str = _f("", "What this profile is for and what it needs.")
    needs_gpu: bool = _f(False, "True when the profile's numbers are meaningless without a GPU.")
    data: DataConfig = _f(DataConfig(), "Task selection.")
    harness: HarnessConfig = _f(HarnessConfig(), "Evaluation harness settings.")
    reward: RewardConfig = _f(RewardConfig(), "Reward coefficients.")


_PROFILES: dict[str, Profile] = {
    "smoke": Profile(
        name="smoke",
        description="Any CPU machine and CI: small slices of every stage, compile-only rewards "
                    "where no GPU; minutes.",
        needs_gpu=False,
        data=DataConfig(max_tasks=24),
        harness=HarnessConfig(reps=5, warmup=1),
    ),
    "mini": Profile(
        name="mini",
        description="One GPU: the full dataset, small Qwen3-architecture policies trained here, "
                    "real GRPO.",
        needs_gpu=True,
        data=DataConfig(max_tasks=0),
        harness=HarnessConfig(),
    ),
    "paper": Profile(
        name="paper",
        description="Two or more GPUs: Qwen3-8B/14B/32B with 4-bit QLoRA, evaluation on its own GPU.",
        needs_gpu=True,
        data=DataConfig(max_tasks=0),
        harness=HarnessConfig(reps=30, gpus="1"),
    ),
}


def get_profile(name: str = "smoke", **overrides: Any) -> Profile:
    """The named profile with overrides applied.

    Overrides use dotted or double-underscore paths for nested fields:
    ``get_profile("mini", **{"harness.reps": 50})`` or ``harness__reps=50``.
    """
    if name not in _PROFILES:
        raise ConfigError(f"unknown profile {name!r}; choose one of {list(PROFILE_NAMES)}")
    prof = _PROFILES[name]
    for key, value in overrides.items():
        prof = _set(prof, key.replace("__", ".").split("."), value, key)
    return prof


def settings_for_profile(table: dict[str, Any], name: str, overrides: dict[str, Any]) -> Any:
    """A stage's settings dataclass for profile `name` from its per-profile `table`, with flat
    keyword overrides; unknown profiles and settings raise ConfigError listing what is allowed.
    (Stage settings such as PolicyConfig and GRPOSettings live beside their code.)"""
    if name not in table:
        raise ConfigError(f"unknown profile {name!r}; choose one of {sorted(table)}")
    base = table[name]
    known = {f.name for f in fields(base)}
    bad = sorted(set(overrides) - known)
    if bad:
        raise ConfigError(f"unknown {type(base).__name__} setting(s) {bad}; known: {sorted(known)}")
    return replace(base, **overrides)


def _set(obj: Any, path: list[str], value: Any, full: str) -> Any:
    names = {f.name: f for f in fields(obj)}
    head = path[0]
    if head not in names:
        raise ConfigError(f"unknown setting {full!r}; {type(obj).__name__} has {sorted(names)}")
    cur = getattr(obj, head)
    if len(path) > 1:
        if not is_dataclass(cur):
            raise ConfigError(f"setting {full!r}: {head!r} has no sub-settings")
        return replace(obj, **{head: _set(cur, path[1:], value, full)})
    return replace(obj, **{head: _coerce(cur, value, full)})


def _coerce(cur: Any, value: Any, full: str) -> Any:
    if cur is None or value is None or isinstance(value, type(cur)):
        return value
    try:
        if isinstance(cur, bool):
            if isinstance(value, str):
                if value.lower() in ("1", "true", "yes", "on"):
                    return True
                if value.lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            return bool(value)
        if isinstance(cur, tuple):
            return tuple(value.split(",")) if isinstance(value, str) else tuple(value)
        return type(cur)(value)
    except (TypeError, ValueError):
        raise ConfigError(f"setting {full!r} expects {type(cur).__name__}, got {value!r}") from None


def describe(obj: Any = None, prefix: str = "") -> list[dict[str, Any]]:
    """Rows (setting, value, help) for every field, nested ones dotted: for tables in notebooks."""
    obj = obj if obj is not None else get_profile()
    rows = []
    for f in fields(obj):
        val = getattr(obj, f.name)
        if is_dataclass(val):
            rows.extend(describe(val, f"{prefix}{f.name}."))
        else:
            rows.append({"setting": prefix + f.name, "value": val,
                         "help": f.metadata.get("help", "")})
    return rows


def default_profile() -> str:
    """'mini' where a CUDA GPU is visible, else 'smoke' (run_all.sh's default)."""
    from cudaperf.envinfo import gpu_available

    return "mini" if gpu_available() else "smoke"


__all__ = ["ConfigError", "settings_for_profile", "DataConfig", "HarnessConfig", "PROFILE_NAMES", "Profile",
           "RewardConfig", "default_profile", "describe", "get_profile"]
