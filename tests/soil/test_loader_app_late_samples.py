"""The blind-mapping part of the loader app with a machine sample stamped before the last one: refused and counted,
the rest of the period mapped."""
import math

from onboard.soil.blind_map import BladePose
from onboard.soil.grid_map import GridMap
from onboard.soil.loader_app import BlindMapping, MachineSample, checked_config

DT_US = 16667


def _sample(k, north_m, east_m=2.0, down_m=0.1, phase="cut", lane=(0, 0)):
    pose = BladePose(k * DT_US, north_m, east_m, down_m, 0.0, math.radians(10.0), 0.0)
    return MachineSample(k * DT_US, pose, (5000.0, -500.0), 1800.0, 4.0e6, 0.0, 1.0, 0.0, phase, lane)


class _Cuts:
    def __init__(self):
        self.cuts = []

    def submit(self, cut):
        self.cuts.append(cut)


def _mapping_node():
    from onboard.runtime.node import Node
    node = Node("loader")
    mapping = node.add("mapping", BlindMapping(GridMap({"size_m": [8.0, 6.0], "cell_m": 0.1}),
                                               checked_config({"estimation": False}), _Cuts()))
    return node, mapping


def test_a_machine_sample_earlier_than_the_last_is_refused_and_the_rest_of_the_period_is_mapped():
    """A sample stamped before the last one was queued: the blind map raised BlindMapError out of the map
    group in the middle of its queue (the queue already taken: the later samples of the period were lost,
    the stale sample already in the cut). It is refused at the entry point and counted instead."""
    node, mapping = _mapping_node()
    for k in range(5):
        mapping.on_machine(_sample(k, 1.0 + k / 60.0))
    mapping.on_machine(_sample(2, 1.0))                      # late: earlier than the last sample
    for k in range(5, 10):
        mapping.on_machine(_sample(k, 1.0 + k / 60.0))
    node.step(10 * DT_US)
    assert mapping.report()["rejected"] == 1
    assert mapping.mapper.poses[-1].time_us == 9 * DT_US
    times = [s.time_us for s in mapping.cut.samples]
    assert times == sorted(times) and len(times) == 10
