"""Occupancy calculator against values derived by hand from NVIDIA's per-architecture limits."""
import pytest

from cudaperf.occupancy import ARCH, arch_limits, occupancy


def test_hopper_full_occupancy_256_threads_32_regs():
    # 32 regs x 32 threads = 1024 regs/warp -> 16 warps per 16K-register sub-partition -> 64 warps.
    o = occupancy("9.0", 256, 32, 0)
    assert o["active_blocks"] == 8 and o["active_warps"] == 64
    assert o["occupancy"] == 1.0 and o["limiter"] == "warps" and o["valid"]


def test_hopper_128_regs_is_register_limited_to_a_quarter():
    # 128 x 32 = 4096 regs/warp -> 4 warps per sub-partition -> 16 warps = 2 blocks of 8 warps.
    o = occupancy(9.0, 256, 128, 0)
    assert (o["active_blocks"], o["active_warps"], o["limiter"]) == (2, 16, "regs")
    assert o["occupancy"] == pytest.approx(0.25)


def test_hopper_48k_smem_is_smem_limited():
    # 48 KiB + 1 KiB reserved = 49 KiB per block; 228 KiB / 49 KiB = 4 blocks = 32 warps = 50 %.
    o = occupancy("sm_90", 256, 32, 48 * 1024)
    assert (o["active_blocks"], o["limiter"]) == (4, "smem")
    assert o["occupancy"] == pytest.approx(0.5)


def test_register_allocation_rounds_up_to_256_per_warp():
    # 33 regs -> 1056 -> 1280 regs/warp -> 12 warps/partition -> 48 warps -> 6 blocks of 8 warps.
    o = occupancy("9.0", 256, 33, 0)
    assert o["active_blocks"] == 6 and o["limiter"] == "regs"
    assert o["occupancy"] == pytest.approx(48 / 64)


def test_small_blocks_hit_the_block_limit():
    # 32 threads = 1 warp per block; 32 resident blocks on 9.0 -> 32 of 64 warps.
    o = occupancy("9.0", 32, 16, 0)
    assert (o["active_blocks"], o["limiter"]) == (32, "blocks")
    assert o["occupancy"] == pytest.approx(0.5)
    # Turing: 16 blocks x 1 warp of 32 warps; Ada: 24 blocks of 48 warps.
    assert occupancy("7.5", 32, 16, 0)["occupancy"] == pytest.approx(0.5)
    assert occupancy("8.9", 32, 16, 0)["occupancy"] == pytest.approx(0.5)


def test_smem_granularity_and_reserved_per_arch():
    # 8.0: 1 B + 1 KiB reserved rounds to 1152 (128 B units); 164 KiB / 1152 = 145 -> block limit.
    o = occupancy("8.0", 32, 32, 1)
    assert o["blocks_by"]["smem"] == 145 and o["limiter"] == "blocks"
    # 7.0: no reserve, 256 B granularity: 12 KiB blocks -> 96 KiB / 12 KiB = 8 blocks of 8 warps.
    o = occupancy("7.0", 256, 32, 12 * 1024)
    assert o["active_blocks"] == 8 and o["occupancy"] == 1.0
    # 8.6: 100 KiB per SM, 20 KiB + 1 KiB -> 4 blocks of 4 warps = 16 of 48 warps.
    o = occupancy("8.6", 128, 32, 20 * 1024)
    assert (o["active_blocks"], o["limiter"]) == (4, "smem")
    assert o["occupancy"] == pytest.approx(16 / 48)


def test_impossible_launches_give_zero_not_an_exception():
    assert occupancy("9.0", 2048, 32, 0)["valid"] is False
    assert occupancy("9.0", 256, 256, 0)["occupancy"] == 0.0
    o = occupancy("9.0", 256, 32, 228 * 1024)
    assert o["valid"] is False and o["limiter"] == "smem"
    assert occupancy("8.6", 128, 32, 99 * 1024)["active_blocks"] == 1  # opt-in maximum fits
    assert occupancy("8.6", 128, 32, 100 * 1024)["active_blocks"] == 0
    # 1024 threads x 255 regs needs 256K registers per block: cannot launch.
    assert occupancy("9.0", 1024, 255, 0)["limiter"] == "regs"


def test_carveout_preference_limits_shared_memory():
    # 9.0 with a 64 KiB carve-out: 16 KiB + 1 KiB blocks -> 3 blocks (vs 13 at 228 KiB).
    assert occupancy("9.0", 128, 32, 16 * 1024, carveout_kib=64)["active_blocks"] == 3
    assert occupancy("9.0", 128, 32, 16 * 1024)["active_blocks"] == 13


def test_occupancy_never_increases_with_more_registers_or_smem():
    for cc in ARCH:
        prev = 2.0
        for regs in range(0, 256, 8):
            occ = occupancy(cc, 256, regs, 0)["occupancy"]
            assert 0.0 <= occ <= prev + 1e-12
            prev = occ
        prev = 2.0
        for kib in range(0, 64, 4):
            occ = occupancy(cc, 128, 32, kib * 1024)["occupancy"]
            assert occ <= prev + 1e-12
            prev = occ


def test_unknown_compute_capability_raises():
    with pytest.raises(ValueError, match="unsupported compute capability"):
        arch_limits("6.1")
