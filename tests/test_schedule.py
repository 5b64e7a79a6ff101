"""The GRPO run's task order (cudaperf.schedule): what the rollout's lookahead relies on."""
from collections import Counter

import pytest

from cudaperf.schedule import StepSchedule, task_order

POOL = [f"t{i}" for i in range(10)]


def test_each_pass_is_a_permutation_cut_to_whole_steps():
    order = task_order(POOL, per_step=4, steps=6, seed=0)
    assert len(order) == 24
    passes = [order[i:i + 8] for i in range(0, 24, 8)]  # 10 tasks: 2 whole steps of 4 a pass
    for p in passes:
        assert len(set(p)) == 8 and set(p) <= set(POOL)  # no task twice within a pass
    for k in range(6):  # hence never twice within a step
        assert len(set(order[4 * k:4 * k + 4])) == 4
    assert passes[0] != passes[1]  # a fresh permutation each pass
    # over many passes every task is met about equally often (the cut drops different ones)
    many = Counter(task_order(POOL, per_step=4, steps=400, seed=1))
    assert set(many) == set(POOL) and max(many.values()) - min(many.values()) < 0.2 * max(many.values())


def test_same_seed_same_order_and_a_longer_run_extends_it():
    a = task_order(POOL, 4, 5, seed=3)
    assert a == task_order(POOL, 4, 5, seed=3)
    assert task_order(POOL, 4, 9, seed=3)[:20] == a  # a resumed, longer run meets the same tasks first
    assert task_order(POOL, 4, 5, seed=4) != a


def test_small_pools_and_edges():
    assert task_order(["a"], 2, 10) == ["a", "a"]  # fewer tasks than a step: repeated to fill one
    assert task_order(["a", "b"], 4, 10) == ["a", "b", "a", "b"]
    assert task_order(POOL, 4, 0) == POOL  # no step count: the pool once, in its order
    assert task_order([], 4, 5) == []
    with pytest.raises(ValueError):
        task_order(POOL, 0, 5)


def test_step_schedule_slices_per_process():
    order = task_order(POOL, per_step=4, steps=3, seed=0)  # 2 processes x 2 tasks a step
    sch = StepSchedule(tuple(order), tasks_per_step=2, world_size=2)
    for k in range(3):
        assert sch.tasks_at(k, 0) + sch.tasks_at(k, 1) == order[4 * k:4 * k + 4]
    assert sch.tasks_at(3, 0) == [] and sch.tasks_at(-1) == []  # past the end of the run
    small = StepSchedule(("a", "a"), tasks_per_step=2)  # a repeated small pool: every step the same
    assert small.tasks_at(0) == small.tasks_at(7) == ["a", "a"]
