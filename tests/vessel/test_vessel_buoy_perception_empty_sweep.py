"""An empty LIDAR sweep (open water: nothing above the water in range) is a frame without detections in both
detection paths, also as the empty list a log gives back for it, not a malformed frame."""
import numpy as np

from onboard.runtime.node import Node
from onboard.vessel.buoy_perception import LidarFrame, PerceptionPart, detect, detect_pure


def test_an_empty_sweep_has_no_detections_in_both_paths():
    for points in ([], (), np.zeros((0, 3)), np.zeros(0)):
        assert detect(points, 1.0, 2.0, 0.3) == [] == detect_pure(points, 1.0, 2.0, 0.3)


def test_an_empty_sweep_from_a_log_is_a_frame_not_a_bad_one():
    frame = LidarFrame(1000, np.zeros((0, 3)))
    rebuilt = LidarFrame(1000, frame.as_dict()["points_body_m"])          # [] as the log holds it
    for f in (frame, rebuilt):
        node = Node("perception-empty")
        part = node.add("perception", PerceptionPart(lambda: (0.0, 0.0, 0.0), {}, 10))
        part.on_lidar(f)
        node.step(100000)
        assert part.frames == 1 and part.bad_frames == 0, part.report()
