"""LIDAR buoy perception (onboard.vessel.buoy_perception) on sweeps of the simulated LIDAR
(harness.sim.lidar) over generated courses (harness.sim.boat_course): every buoy found within 0.5 m, no
phantom buoys, labels by geometry; clustering, water cut, shadows, the map, bad input."""
import math

import numpy as np
import pytest

from harness.sim.boat_course import Buoy, Course, generate_course, task_path
from harness.sim.lidar import Lidar, LidarScene
from onboard.vessel import buoy_perception as bp


def _perceive(course, seed, pos_sigma_m=0.1, yaw_sigma_rad=math.radians(0.3)):
    """Sweeps at the true poses along the course; perception with estimated poses = truth + noise."""
    lidar = Lidar({}, np.random.default_rng(seed))
    scene = LidarScene(course)
    est = np.random.default_rng(seed + 1000)
    m = bp.BuoyMap(bp.settings())
    for i, (n, e, yaw) in enumerate(task_path(course)):
        pts = lidar.sweep(scene, n, e, yaw)
        m.step(pts, n + est.normal(0, pos_sigma_m), e + est.normal(0, pos_sigma_m),
               yaw + est.normal(0, yaw_sigma_rad), i * 100_000)
    return m


def _nearest(b, tracks):
    return min(tracks, key=lambda t: math.hypot(t.north_m - b.north_m, t.east_m - b.east_m))


def _dist(a, b):
    return math.hypot(a.north_m - b.north_m, a.east_m - b.east_m)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_buoy_found_within_half_a_metre_and_no_phantoms(seed):
    course = generate_course(seed, "robotx")
    m = _perceive(course, seed)
    found = m.confirmed()
    for b in course.buoys:
        t = _nearest(b, found)
        assert _dist(b, t) < 0.5, (b, t)
        assert abs(t.radius_m - b.radius_m) < 0.15, (b, t)
        assert b.height_m - 1.0 < t.height_m < b.height_m + 0.15, (b, t)    # max of the hits: a lower bound
    for t in found:                                                         # no phantom buoys
        assert min(_dist(b, t) for b in course.buoys) < 0.5, t
    assert len(found) == len(course.buoys)                                  # one track per buoy


@pytest.mark.parametrize("seed", [0, 3])
def test_labels_by_geometry_and_expected_positions(seed):
    course = generate_course(seed, "robotx")
    found = _perceive(course, seed).confirmed()
    rng = np.random.default_rng(seed)
    by_role = {}
    for b in course.buoys:
        by_role.setdefault(b.role, []).append(b)

    def mid(a, b):
        return 0.5 * (a.north_m + b.north_m), 0.5 * (a.east_m + b.east_m)

    def off(p):                           # the mission's expected positions are a few metres off
        return p[0] + rng.uniform(-3, 3), p[1] + rng.uniform(-3, 3)

    speed, field, pgate, dock = course.tasks
    start = (course.start_north_m, course.start_east_m)

    def heading(a, b):
        return math.atan2(b[1] - a[1], b[0] - a[0])

    entry = mid(by_role["entry_left"][0], by_role["entry_right"][0])
    pinger = by_role["pinger"][0]
    pts = [start, (speed.north_m, speed.east_m), (field.north_m, field.east_m), (pgate.north_m, pgate.east_m),
           (dock.north_m, dock.east_m)]
    expected = [("speed_gate",) + off(pts[1]) + (heading(pts[0], pts[1]),),
                ("entry",) + off(entry) + (heading(pts[1], entry),),
                ("exit",) + off(pts[2]) + (heading(entry, pts[2]),),
                ("pinger",) + off((pinger.north_m, pinger.east_m)) + (0.0,),
                ("pinger_gate",) + off(pts[3]) + (heading(pts[2], pts[3]),),
                ("dock",) + off(pts[4]) + (heading(pts[3], pts[4]),)]
    bp.label_buoys(found, expected)
    marked_gate = sorted((b for b in course.buoys if b.role in ("gate_left", "gate_right")),
                         key=lambda b: math.hypot(b.north_m - pgate.north_m, b.east_m - pgate.east_m))[:2]
    speed_gate = sorted((b for b in course.buoys if b.role in ("gate_left", "gate_right")),
                        key=lambda b: math.hypot(b.north_m - speed.north_m, b.east_m - speed.east_m))[:2]
    for b in course.buoys:
        t = _nearest(b, found)
        if b.role in ("gate_left", "gate_right") and b not in marked_gate and b not in speed_gate:
            assert t.role == "obstacle", (b, t)              # the unmarked gate of the pinger pair
        else:
            assert t.role == b.role, (b, t)


def test_clustering_splits_and_merges():
    a = np.array([[0.0, 0.0], [0.3, 0.2], [0.6, 0.1], [0.9, 0.4]])        # a chain closer than a cell
    b = a + [10.0, -3.0]
    c = np.array([[0.0, 1.6]])                                            # more than 2 sqrt(2) cells from a
    lab = bp.cluster_labels(np.vstack([a, b, c]), 0.5)
    assert len(set(lab[:4])) == 1 and len(set(lab[4:8])) == 1 and len(set(lab)) == 3
    assert lab[0] != lab[4] and lab[8] not in (lab[0], lab[4])
    # a long line of points one cell apart is one cluster, wherever it crosses cell borders
    line = np.stack([np.linspace(-7.3, 7.3, 60), np.linspace(3.1, -4.2, 60)], axis=1)
    assert len(set(bp.cluster_labels(line, 0.5))) == 1
    assert len(bp.cluster_labels(np.zeros((0, 2)), 0.5)) == 0


def test_single_buoy_water_cut_and_shore():
    buoy = Buoy(15.0, 4.0, 0.5, 1.2)
    course = Course(0.0, 0.0, 0.0, (buoy,), (1.0, 0.0), (), ((40.0, -100.0), (40.0, 100.0)))
    pts = Lidar({}, np.random.default_rng(4)).sweep(LidarScene(course), 0.0, 0.0, 0.0)
    # a compact patch of returns 3 cm above the water (spray, a real sensor's water returns): cut
    patch = np.random.default_rng(5).uniform(-0.3, 0.3, (12, 2)) + [8.0, -3.0]
    water = np.column_stack([patch, np.full(12, -0.03)])
    dets = bp.detect(np.vstack([pts, water]), 0.0, 0.0, 0.0)                  # the shore wall is too wide
    assert len(dets) == 1
    d = dets[0]
    assert _dist(d, buoy) < 0.15 and abs(d.radius_m - 0.5) < 0.15 and d.height_m <= 1.2 + 0.1
    # the cut: the same low points raised above the water cut become a cluster
    raised = water + [0.0, 0.0, -0.5]
    assert len(bp.detect(np.vstack([pts, raised]), 0.0, 0.0, 0.0)) > 1


def test_a_shore_fragment_seen_between_two_buoys_is_not_a_buoy():
    # two posts 2.4 m apart 10 m ahead hide the wall 15 m ahead but for a slot 2.4 m wide
    posts = (Buoy(10.0, -1.2, 0.4, 3.0), Buoy(10.0, 1.2, 0.4, 3.0))
    course = Course(0.0, 0.0, 0.0, posts, (1.0, 0.0), (), ((15.0, -100.0), (15.0, 100.0)))
    lidar = Lidar({"range_sigma_m": 0.0, "mount_height_m": 1.0, "mount_forward_m": 0.0})
    pts = lidar.sweep(LidarScene(course), 0.0, 0.0, 0.0)
    frag = (pts[:, 0] > 14.0) & (np.abs(pts[:, 1]) < 2.0)
    assert frag.sum() > 5                                                     # the wall is seen in the slot
    cfg = bp.settings({"sensor_forward_m": 0.0})
    dets = bp.detect(pts, 0.0, 0.0, 0.0, cfg)
    assert sorted(round(d.east_m) for d in dets) == [-1, 1]                  # the posts, no fragment
    assert all(d.north_m < 11.0 for d in dets)
    # without the posts' shadow test the fragment would pass as a buoy
    alone = bp.detect(pts[frag], 0.0, 0.0, 0.0, cfg)
    assert len(alone) == 1 and alone[0].north_m > 14.0


def test_map_averages_counts_and_confirms():
    m = bp.BuoyMap(bp.settings({"min_hits": 3}))
    m.update([bp.Detection(10.0, 0.0, 0.5, 1.0, 20), bp.Detection(30.0, 5.0, 0.4, 0.6, 10)], 0)
    m.update([bp.Detection(10.4, 0.2, 0.7, 1.2, 20)], 100_000)
    m.update([bp.Detection(10.2, -0.2, 0.6, 0.8, 20), bp.Detection(50.0, 0.0, 0.3, 0.5, 5)], 200_000)
    assert len(m.tracks) == 3
    t = m.tracks[0]
    assert (t.hits, t.first_us, t.last_us) == (3, 0, 200_000)
    assert (t.north_m, t.east_m, t.radius_m, t.height_m) == pytest.approx((10.2, 0.0, 0.6, 1.2))
    assert m.confirmed() == [t]


def test_bad_input_is_refused_and_the_map_kept():
    m = bp.BuoyMap()
    pts = np.array([[10.0, 0.0, -0.5], [10.1, 0.1, -0.6]])
    m.step(pts, 0.0, 0.0, 0.0, 0)
    before = [(t.north_m, t.east_m, t.hits) for t in m.tracks]
    with pytest.raises(bp.PerceptionError, match="not finite") as e:
        m.step(pts, float("nan"), 0.0, 0.0, 1)
    assert "\n" not in str(e.value)
    with pytest.raises(bp.PerceptionError, match="shape"):
        m.step(np.zeros((4, 2)), 0.0, 0.0, 0.0, 1)
    assert [(t.north_m, t.east_m, t.hits) for t in m.tracks] == before
    nan_pts = np.vstack([pts, [[np.nan, 1.0, -1.0]]])                         # non-finite points are dropped
    assert len(bp.detect(nan_pts, 0.0, 0.0, 0.0)) == 1
    with pytest.raises(bp.PerceptionError, match="perception.colour"):
        bp.settings({"colour": 1})
    with pytest.raises(bp.PerceptionError, match="cell_m"):
        bp.settings({"cell_m": 0.0})
    with pytest.raises(bp.PerceptionError, match="unknown expected"):
        bp.label_buoys([], [("harbour", 0.0, 0.0, 0.0)])


def test_wamv_app_perception_part_maps_buoys_from_its_estimated_pose():
    """The LIDAR on the simulated WAM-V (harness.sim.lidar.LidarSensor at the truth pose) feeding the boat
    app's ``lidar`` entry; the app's ``perception`` group places the sweeps with its EKF pose."""
    from boards.wamv.app import WamvApp
    from harness.sim.boat_world import BoatWorld
    from harness.sim.lidar import LidarSensor
    from harness.sim.rng import RunRandom

    buoys = (Buoy(15.0, -6.0, 0.4, 1.2), Buoy(15.0, 6.0, 0.4, 1.2), Buoy(25.0, 8.0, 0.5, 0.8),
             Buoy(30.0, 20.0, 0.3, 0.6), Buoy(5.0, 15.0, 0.4, 1.0))
    course = Course(0.0, 0.0, 0.0, buoys, (40.0, 30.0), ())
    w = BoatWorld(RunRandom(1), gnss={"dropout_prob": 0.0, "outlier_prob": 0.0},
                  interface={"latency_s": 0.0, "timeout_ms": 200})
    app = WamvApp(w.driver(), w.gnss_app_end, {"plan": [[8.0, 0.0, 1.5], [8.0, 60.0, 1.5]], "perception": {}})
    w.attach_app(app, app.frame)
    w.add_sensor(LidarSensor(Lidar({}, RunRandom(1).stream("lidar")), LidarScene(course), w.vessel, app.on_lidar))
    topics = {}
    try:
        w.start(app, record=lambda topic, t, msg: topics.setdefault(topic, []).append(msg))
        w.run(12_000_000, 1_000_000)
    finally:
        w.close()
    rep = app.report()["perception"]
    assert rep["frames"] >= 110 and rep["bad_frames"] == 0 and rep["skipped_no_pose"] <= 2
    found = app.perception.map.confirmed()
    assert len(found) == len(buoys)
    for b in buoys:
        assert _dist(b, _nearest(b, found)) < 0.5
    # recorded at the app's boundary: the stamped sweeps in, the buoy map out
    assert len(topics["/app/in/lidar"]) == rep["frames"] + rep["skipped_no_pose"]
    assert len(topics["/app/out/buoys"][-1]["buoys"]) == len(buoys)
    # a malformed frame is counted and leaves the map as it was
    before = [(t.north_m, t.east_m, t.hits) for t in app.perception.map.tracks]
    app.on_lidar(bp.LidarFrame(app.perception.map.tracks[0].last_us + 1, np.zeros((3, 2))))
    app.perception._step(13_000_000)
    assert app.report()["perception"]["bad_frames"] == 1
    assert [(t.north_m, t.east_m, t.hits) for t in app.perception.map.tracks] == before


def test_pure_and_numpy_paths_give_the_same_detections():
    from harness.sim.lidar import PLANAR
    n_det = 0
    for cfg in ({}, PLANAR):
        course = generate_course(4, "robotx")
        lidar, scene = Lidar(cfg, np.random.default_rng(4)), LidarScene(course)
        for n, e, yaw in task_path(course, 6.0):
            pts = lidar.sweep(scene, n, e, yaw)
            a = sorted(bp.detect(pts, n, e, yaw), key=lambda d: (d.north_m, d.east_m))
            b = sorted(bp.detect_pure(pts.tolist(), n, e, yaw), key=lambda d: (d.north_m, d.east_m))
            assert len(a) == len(b)
            for x, y in zip(a, b):
                assert x.n_points == y.n_points
                assert (x.north_m, x.east_m, x.radius_m, x.height_m, x.range_m) == pytest.approx(
                    (y.north_m, y.east_m, y.radius_m, y.height_m, y.range_m), abs=1e-9)
            n_det += len(a)
    assert n_det > 300
    with pytest.raises(bp.PerceptionError):
        bp.detect_pure([(1.0, 2.0)], 0.0, 0.0, 0.0)
