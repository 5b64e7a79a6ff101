"""cudaperf.config: profiles are complete, overrides are checked, coefficients match DESIGN §1."""
from __future__ import annotations

import dataclasses

import pytest

from cudaperf import config


def test_every_profile_loads_and_is_frozen():
    for name in config.PROFILE_NAMES:
        p = config.get_profile(name)
        assert p.name == name and p.description
        with pytest.raises(dataclasses.FrozenInstanceError):
            p.name = "other"  # type: ignore[misc]


def test_reward_defaults_are_the_papers():
    r = config.get_profile("paper").reward
    assert (r.alpha_comp, r.alpha_wrong, r.s_min, r.s_max) == (3.0, 2.0, -0.5, 4.0)


def test_only_smoke_runs_without_gpu():
    assert not config.get_profile("smoke").needs_gpu
    assert config.get_profile("mini").needs_gpu and config.get_profile("paper").needs_gpu


def test_unknown_profile_and_setting_rejected_with_choices():
    with pytest.raises(config.ConfigError, match="smoke"):
        config.get_profile("tiny")
    with pytest.raises(config.ConfigError, match="reps"):
        config.get_profile("smoke", **{"harness.repz": 3})


def test_overrides_nested_and_coerced():
    p = config.get_profile("mini", harness__reps="7", **{"reward.alpha_cv": 2})
    assert p.harness.reps == 7 and p.reward.alpha_cv == 2.0
    assert config.get_profile("mini").harness.reps != 7  # the registry itself is untouched
    with pytest.raises(config.ConfigError, match="expects int"):
        config.get_profile("smoke", harness__reps="many")
    with pytest.raises(config.ConfigError, match="expects bool"):
        config.get_profile("smoke", harness__flush_l2="maybe")


def test_every_field_has_help():
    for name in config.PROFILE_NAMES:
        rows = config.describe(config.get_profile(name))
        missing = [r["setting"] for r in rows if not r["help"].strip()]
        assert not missing, missing
        assert any(r["setting"] == "reward.alpha_comp" for r in rows)


def test_default_profile_follows_gpu(monkeypatch):
    import cudaperf.envinfo as envinfo

    monkeypatch.setattr(envinfo, "gpu_available", lambda: False)
    assert config.default_profile() == "smoke"
    monkeypatch.setattr(envinfo, "gpu_available", lambda: True)
    assert config.default_profile() == "mini"
