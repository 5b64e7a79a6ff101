"""Theoretical occupancy of a kernel launch on compute capabilities 7.0, 7.5, 8.0, 8.6, 8.9, 9.0.

Guarantees: `occupancy(cc, threads_per_block, regs_per_thread, smem_per_block)` returns the
number of resident blocks and warps per SM, the occupancy (active warps / max warps, in [0, 1])
and which per-SM limit binds, computed the way NVIDIA's occupancy calculator does
(`cuda_occupancy.h` shipped with the CUDA toolkit): registers are allocated per warp in units of
256 and per SM sub-partition (4 per SM); shared memory is allocated per block in units of the
allocation granularity, plus the driver's reserved 1 KiB per block on 8.0+, against the largest
shared-memory carve-out (the driver's choice when no preference is set). A launch that cannot run
at all (too many threads, registers or shared memory per block) yields 0 blocks and
``valid: False`` with a reason, never an exception: candidates are untrusted and may ask for it.
Unknown compute capabilities raise ValueError.

Sources of the limits (cited per field in `ARCH`):
  [PG]  CUDA C++ Programming Guide, "Compute Capabilities", table "Technical Specifications per
        Compute Capability" (max warps/SM, max blocks/SM, 64K registers/SM, 255 regs/thread,
        1024 threads/block, shared memory per SM and per block, carve-out sizes).
  [OCC] cuda_occupancy.h (CUDA 13.0): cudaOccRegAllocationGranularity (256),
        cudaOccSubPartitionsPerMultiprocessor (4), cudaOccSMemAllocationGranularity (256 on 7.x,
        128 on 8.0+), cudaOccMaxBlocksPerMultiprocessor, cudaOccAlignUpShmemSizeVoltaPlus
        (carve-out choices), cudaOccSMemPerBlock (reserved shared memory added on 8.0+).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

KIB = 1024
WARP = 32


@dataclass(frozen=True)
class ArchLimits:
    max_warps_per_sm: int  # [PG] "Maximum number of resident warps per SM"
    max_blocks_per_sm: int  # [PG] "Maximum number of resident blocks per SM"; [OCC]
    smem_per_sm: int  # bytes, largest carve-out [PG] "Maximum amount of shared memory per SM"
    smem_per_block_optin: int  # bytes [PG] "Maximum amount of shared memory per thread block"
    smem_granularity: int  # bytes [OCC] cudaOccSMemAllocationGranularity
    reserved_smem_per_block: int  # bytes [PG] "1 KB of shared memory is reserved for system use"
    carveouts_kib: tuple[int, ...]  # [PG] + [OCC] cudaOccAlignUpShmemSizeVoltaPlus
    regs_per_sm: int = 64 * KIB  # [PG] "Number of 32-bit registers per SM"
    reg_unit: int = 256  # [OCC] registers are allocated per warp in units of 256
    sub_partitions: int = 4  # [OCC] registers are split across 4 SM sub-partitions
    max_regs_per_thread: int = 255  # [PG] "Maximum number of 32-bit registers per thread"
    max_threads_per_block: int = 1024  # [PG]


_VOLTA_CARVE = (0, 8, 16, 32, 64, 96)
_GA100_CARVE = (0, 8, 16, 32, 64, 100, 132, 164)
_GA10X_CARVE = (0, 8, 16, 32, 64, 100)
_HOPPER_CARVE = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)

ARCH: dict[str, ArchLimits] = {
    # V100
    "7.0": ArchLimits(64, 32, 96 * KIB, 96 * KIB, 256, 0, _VOLTA_CARVE),
    # Turing: half the warps and blocks, 64 KiB shared memory
    "7.5": ArchLimits(32, 16, 64 * KIB, 64 * KIB, 256, 0, (32, 64)),
    # A100
    "8.0": ArchLimits(64, 32, 164 * KIB, 163 * KIB, 128, 1 * KIB, _GA100_CARVE),
    # GA10x (RTX 30xx, A40)
    "8.6": ArchLimits(48, 16, 100 * KIB, 99 * KIB, 128, 1 * KIB, _GA10X_CARVE),
    # Ada (L4, L40, RTX 40xx)
    "8.9": ArchLimits(48, 24, 100 * KIB, 99 * KIB, 128, 1 * KIB, _GA10X_CARVE),
    # Hopper (H100, H200)
    "9.0": ArchLimits(64, 32, 228 * KIB, 227 * KIB, 128, 1 * KIB, _HOPPER_CARVE),
}

LIMITERS = ("warps", "blocks", "regs", "smem")


def arch_limits(cc: str | float) -> ArchLimits:
    """Limits for a compute capability given as '9.0', 9.0, 'sm_90' or '90'."""
    key = _cc_key(cc)
    if key not in ARCH:
        raise ValueError(f"unsupported compute capability {cc!r}; known: {sorted(ARCH)}")
    return ARCH[key]


def _cc_key(cc: str | float) -> str:
    if isinstance(cc, (int, float)):
        return f"{float(cc):.1f}"
    s = str(cc).strip().lower().removeprefix("sm_").removeprefix("compute_")
    if s.isdigit() and len(s) == 2:
        return f"{s[0]}.{s[1]}"
    try:
        return f"{float(s):.1f}"
    except ValueError:
        return s


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy(cc: str | float, threads_per_block: int, regs_per_thread: int,
              smem_per_block: int, *, carveout_kib: int | None = None) -> dict:
    """Theoretical occupancy of one kernel launch.

    `smem_per_block` is the block's static plus dynamic shared memory in bytes (without the
    driver's reserved part, which is added here). `carveout_kib` forces a shared-memory carve-out
    preference (rounded up to a supported size, as the driver does); None = the largest.
    Returns dict(active_blocks, active_warps, occupancy, limiter, valid, reason, blocks_by),
    where blocks_by maps every limiter to the number of blocks it alone would allow.
    """
    lim = arch_limits(cc)
    tpb, regs, smem = int(threads_per_block), max(int(regs_per_thread), 0), max(int(smem_per_block), 0)

    def invalid(limiter: str, reason: str) -> dict:
        return {"active_blocks": 0, "active_warps": 0, "occupancy": 0.0, "limiter": limiter,
                "valid": False, "reason": reason, "blocks_by": {}}

    if tpb <= 0 or tpb > lim.max_threads_per_block:
        return invalid("warps", f"{tpb} threads per block is outside 1..{lim.max_threads_per_block}")
    if regs > lim.max_regs_per_thread:
        return invalid("regs", f"{regs} registers per thread exceeds {lim.max_regs_per_thread}")

    warps_per_block = math.ceil(tpb / WARP)
    by: dict[str, int] = {
        "warps": lim.max_warps_per_sm // warps_per_block,
        "blocks": lim.max_blocks_per_sm,
    }

    # Registers: per-warp allocation rounded to the unit; each sub-partition holds whole warps.
    regs_per_warp = _round_up(regs * WARP, lim.reg_unit)
    if regs_per_warp == 0:
        by["regs"] = by["blocks"]
    else:
        # The hardware launch check assumes the block's warps are spread over all partitions.
        if regs_per_warp * _round_up(warps_per_block, lim.sub_partitions) > lim.regs_per_sm:
            return invalid("regs", f"{regs} registers x {tpb} threads exceeds the per-block register file")
        warps_per_part = (lim.regs_per_sm // lim.sub_partitions) // regs_per_warp
        by["regs"] = (warps_per_part * lim.sub_partitions) // warps_per_block

    # Shared memory: reserved part counts against the SM; allocation rounds up to granularity.
    smem_alloc = _round_up(smem + lim.reserved_smem_per_block, lim.smem_granularity)
    if smem_alloc > lim.smem_per_block_optin + lim.reserved_smem_per_block:
        return invalid("smem", f"{smem} bytes of shared memory per block exceeds "
                               f"{lim.smem_per_block_optin}")
    if carveout_kib is None:
        sm_smem = lim.smem_per_sm
    else:
        choices = [c for c in lim.carveouts_kib if c * KIB >= carveout_kib * KIB]
        sm_smem = (choices[0] if choices else lim.carveouts_kib[-1]) * KIB
        # The driver ignores a preference too small for even one block ([OCC]).
        if sm_smem < smem_alloc:
            sm_smem = next(c * KIB for c in lim.carveouts_kib if c * KIB >= smem_alloc)
    by["smem"] = sm_smem // smem_alloc if smem_alloc > 0 else by["blocks"]

    blocks = min(by.values())
    # Ties resolve in LIMITERS order: 'warps' first, since a full SM is the natural ceiling.
    limiter = next(k for k in LIMITERS if by[k] == blocks)
    warps = blocks * warps_per_block
    return {"active_blocks": blocks, "active_warps": warps,
            "occupancy": warps / lim.max_warps_per_sm, "limiter": limiter,
            "valid": blocks > 0, "reason": "" if blocks > 0 else "no block fits on an SM",
            "blocks_by": by}
