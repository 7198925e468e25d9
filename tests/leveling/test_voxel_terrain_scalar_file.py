"""A terrain .npy holding a single number (a 0-d array) is refused with a line that says so; its empty shape made
the message end in "got shape " (nothing). The level-hill loader shares the line."""
import numpy as np
import pytest

from harness.sim.hill_terrain import file_heights_m
from harness.sim.voxel_terrain import load_heights
from onboard.core.settings import ConfigError


@pytest.mark.parametrize("load", [load_heights, file_heights_m])
def test_a_single_number_npy_is_named_as_such(tmp_path, load):
    path = tmp_path / "one.npy"
    np.save(path, np.array(3.0))
    with pytest.raises(ConfigError) as info:
        load(str(path))
    msg = str(info.value)
    assert msg == "terrain file %s: a 2-D height grid is needed, got shape () (a single number)" % path
