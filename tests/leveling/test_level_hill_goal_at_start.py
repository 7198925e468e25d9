"""level-hill's goal on its start sample: a terrain already level (rms 0) or a goal of 0 % is met at 0 s, and a
duration shorter than one simulation step is refused before the run."""
import numpy as np
import pytest

from harness.config import ConfigError
from harness.scenarios import check_metrics, prepare
from harness.scenarios.context import RunContext


def _run(overrides):
    module, config = prepare("level-hill", overrides, reduced=True)
    metrics = module.run(config, RunContext(1))
    check_metrics("level-hill", metrics)
    return metrics


def test_a_terrain_already_level_meets_the_goal_at_the_start(tmp_path):
    path = tmp_path / "flat.npy"
    np.save(path, np.zeros((40, 40)))
    m = _run({"terrain": {"file": str(path)}, "duration_s": 2.0, "record": {"every_s": 1.0}, "robots": 1})
    assert m["initial_rms_m"] == 0.0
    assert m["time_to_goal_s"] == 0.0
    assert m["rms_reduction"] == 0.0
    assert m["success"] is True


def test_a_goal_of_no_reduction_is_met_at_the_start():
    m = _run({"goal": {"rms_reduction": 0.0}, "duration_s": 2.0, "record": {"every_s": 1.0}, "robots": 1})
    assert m["initial_rms_m"] > 0.0
    assert m["time_to_goal_s"] == 0.0


def test_a_duration_shorter_than_one_step_is_refused():
    with pytest.raises(ConfigError, match="duration_s .* shorter than one step"):
        prepare("level-hill", {"duration_s": 0.009, "record": {"every_s": 0.005}}, reduced=True)
