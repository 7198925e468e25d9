"""What the boat app was thinking, as Foxglove views (RobotX AAVS paper, fig. 11: the playback tool shows the
estimate, the LIDAR returns, the perceived buoys and the arbiter's votes of each decision). CPython host side
(numpy, base64): the messages follow Foxglove's schemas (``onboard.runtime.mcap_log.FOXGLOVE_SCHEMAS``) and go
to a ``view(topic, time_us, schema_name, msg)`` callable, e.g. ``McapLog.log_view``.

:class:`BoatViews` is a part of the WAM-V app (``boards.wamv.app``; setting ``views``, rate ``view_rate_hz``):
its rate group reads the app's state and writes, each time (topics under :data:`PREFIX`):

- ``tf_static`` (``foxglove.FrameTransform``, once): ``world`` (ENU) -> ``ned``
  (``onboard.runtime.mcap_log``'s frames);
- ``tf`` (``foxglove.FrameTransform``): ``ned`` -> ``base_link``, the ESTIMATED body frame (FRD);
- ``estimate`` (``foxglove.PoseInFrame``, frame ``ned``): the EKF's position and yaw;
- ``lidar`` (``foxglove.PointCloud``, frame ``ned``): the last sweep perception mapped, placed with the
  estimated pose it was held with (what perception clustered: x north, y east, z down; the sensor is level,
  so a body point's z is its NED z). float32 x, y, z, ``point_stride`` 12, at most ``max_points`` points
  (every k-th beyond that); only when perception mapped a new sweep since the last view;
- ``buoys`` (``foxglove.SceneUpdate``, frame ``ned``): the confirmed buoy map as cylinders from the water
  line up to each buoy's height (diameter 2 ``radius_m``; colour by ``role``, grey for an obstacle) with
  their hit counts;
- ``decision`` (``foxglove.SceneUpdate``, frame ``ned``): the destination (a green sphere), the reference the
  controller follows (an arrow from the estimated position along ``heading_ref_rad``, length 2 s of
  ``speed_ref_mps``), the throttles as text, and the potential field's look-ahead path (a line);
- ``votes`` (``foxglove.Grid``, frame ``ned``; DAMN only): the last decision's polar vote grid resampled to
  a Cartesian grid centred on the vessel (:func:`polar_lookup`), fields ``total``, ``goal``, ``avoid``
  (float32; NaN outside the polar grid's rings); or ``field`` (potential field only): ``-grad U`` on a grid
  of ``field_cell_m`` cells out to ``field_extent_m``, fields ``force_north``, ``force_east``,
  ``force_norm`` (``PotentialFieldArbiter.field_vector``). Only after a new decision.

The views only read the app's state: a run with views on outputs the same commands as one without (its
replay, rebuilt without views, is bit-identical: ``tests/vessel/test_boat_replay.py``).

Grids (``foxglove.Grid``): in ``ned``, identity orientation, the pose at the grid's (min north, min east)
corner; a column index runs north (the frame's x), a row index east (its y); cell (row r, column c) is at
north = corner + (c + 1/2) cell, east = corner + (r + 1/2) cell.
"""
import base64
import math

import numpy as np

from onboard.core.rotations import quat_from_euler
from onboard.runtime.mcap_log import (BODY_FRAME, FRAME_TRANSFORM, GRID, NED_FRAME, NUMERIC_TYPES, POINT_CLOUD,
                                      POSE_IN_FRAME, QUAT_NED_TO_WORLD_WXYZ, SCENE_UPDATE, WORLD_FRAME, fox_color,
                                      fox_pose, fox_quaternion, fox_time, fox_vector3, line, scene_entity, sphere,
                                      text)

PREFIX = "/viz/boat/"
FLOAT32 = NUMERIC_TYPES.index("FLOAT32")          # foxglove.NumericType
ROLE_RGBA = {"obstacle": (0.55, 0.55, 0.55, 0.9), "gate_left": (0.85, 0.1, 0.1, 0.9),
             "gate_right": (0.1, 0.7, 0.2, 0.9), "entry_left": (0.85, 0.1, 0.1, 0.9),
             "entry_right": (0.1, 0.7, 0.2, 0.9), "exit_left": (0.85, 0.1, 0.1, 0.9),
             "exit_right": (0.1, 0.7, 0.2, 0.9), "pinger": (0.95, 0.85, 0.1, 0.9), "dock": (0.2, 0.4, 0.9, 0.9)}
DESTINATION_RGBA = (0.1, 0.8, 0.3, 0.9)
REFERENCE_RGBA = (1.0, 0.5, 0.05, 1.0)
PATH_RGBA = (0.6, 0.2, 0.8, 0.9)
WHITE = (1.0, 1.0, 1.0, 1.0)
REFERENCE_SPAN_S = 2.0                            # the reference arrow is this many seconds of its speed long


def _identity_pose(north_m=0.0, east_m=0.0):
    return fox_pose((north_m, east_m, 0.0))


def point_cloud(time_us, points_ned_m, frame_id=NED_FRAME):
    """A ``foxglove.PointCloud`` of ``points_ned_m`` ((N, 3) in ``frame_id``, m) as float32 x, y, z."""
    data = np.ascontiguousarray(np.asarray(points_ned_m, dtype="<f4").reshape(-1, 3)).tobytes()
    return {"timestamp": fox_time(time_us), "frame_id": frame_id, "pose": _identity_pose(), "point_stride": 12,
            "fields": [{"name": name, "offset": 4 * k, "type": FLOAT32} for k, name in enumerate("xyz")],
            "data": base64.b64encode(data).decode("ascii")}


def sweep_in_ned(points_body_m, north_m, east_m, yaw_rad, max_points=None):
    """A sweep's body points (FRD, m) placed with the pose: (N, 3) north, east, down (m); every k-th point
    when there are more than ``max_points``."""
    p = np.asarray(points_body_m, float).reshape(-1, 3)
    if max_points is not None and len(p) > max_points:
        p = p[::int(math.ceil(len(p) / float(max_points)))]
    c, s = math.cos(yaw_rad), math.sin(yaw_rad)
    out = np.empty_like(p)
    out[:, 0] = north_m + p[:, 0] * c - p[:, 1] * s
    out[:, 1] = east_m + p[:, 0] * s + p[:, 1] * c
    out[:, 2] = p[:, 2]
    return out


def grid(time_us, corner_ne_m, cell_m, columns, fields, frame_id=NED_FRAME):
    """A ``foxglove.Grid`` in ``frame_id`` (module docstring): ``fields`` a list of (name, values) with values
    row-major (rows x ``columns``), one float32 per field and cell."""
    names = [f[0] for f in fields]
    stack = np.stack([np.asarray(f[1], dtype="<f4").reshape(-1) for f in fields], axis=1)
    stride = 4 * len(names)
    return {"timestamp": fox_time(time_us), "frame_id": frame_id, "pose": _identity_pose(*corner_ne_m),
            "column_count": int(columns), "cell_size": {"x": float(cell_m), "y": float(cell_m)},
            "row_stride": stride * int(columns), "cell_stride": stride,
            "fields": [{"name": name, "offset": 4 * k, "type": FLOAT32} for k, name in enumerate(names)],
            "data": base64.b64encode(np.ascontiguousarray(stack).tobytes()).decode("ascii")}


def polar_lookup(headings, rings, range_step_m, cell_m):
    """The Cartesian resampling of DAMN's polar grid (``onboard.vessel.arbiters``: region k * rings + j at
    bearing k 2 pi / headings from north, range (j + 1) ``range_step_m``): -> (index array rows x columns,
    -1 outside the rings; half extent, m; columns). A cell takes the region nearest its centre in bearing and
    range; the grid spans +- (rings + 1/2) ``range_step_m`` around the vessel (bearings are absolute, so the
    table does not change with the vessel's position or heading)."""
    half = (rings + 0.5) * range_step_m
    n = int(math.ceil(2.0 * half / cell_m))
    half = 0.5 * n * cell_m
    centres = (np.arange(n) + 0.5) * cell_m - half
    north = centres[None, :]                       # a column index runs north
    east = centres[:, None]                        # a row index runs east
    rng = np.hypot(north, east)
    j = np.floor(rng / range_step_m + 0.5).astype(np.int64) - 1
    k = np.mod(np.floor(np.arctan2(east, north) / (2.0 * math.pi / headings) + 0.5).astype(np.int64), headings)
    idx = np.where((j >= 0) & (j < rings), k * rings + j, -1)
    return idx, half, n


def vote_grid(time_us, votes, cell_m, lookup=None):
    """The DAMN arbiter's ``last_votes`` as a ``foxglove.Grid`` centred on the vessel (fields total, goal, avoid).
    ``lookup``: :func:`polar_lookup`'s result for these votes' geometry (computed when None)."""
    if lookup is None:
        lookup = polar_lookup(votes["headings"], votes["rings"], votes["range_step_m"], cell_m)
    idx, half, n = lookup
    inside = idx >= 0
    safe = np.where(inside, idx, 0)
    fields = []
    for name in ("total", "goal", "avoid"):
        fields.append((name, np.where(inside, np.asarray(votes[name], float)[safe], np.nan)))
    n0, e0 = votes["origin_ne_m"]
    return grid(time_us, (n0 - half, e0 - half), cell_m, n, fields)


def field_grid(time_us, arbiter, origin_ne_m, cell_m, extent_m):
    """The potential field's ``-grad U`` (``PotentialFieldArbiter.field_vector`` with its last decision's
    obstacles and destination) on a grid of ``cell_m`` cells out to ``extent_m`` around ``origin_ne_m``:
    fields force_north, force_east, force_norm."""
    n = max(1, int(math.ceil(2.0 * extent_m / cell_m)))
    half = 0.5 * n * cell_m
    n0, e0 = origin_ne_m
    fn = np.empty((n, n))
    fe = np.empty((n, n))
    for r in range(n):                              # a row index runs east
        pe = e0 - half + (r + 0.5) * cell_m
        for c in range(n):                          # a column index runs north
            vn, ve = arbiter.field_vector(n0 - half + (c + 0.5) * cell_m, pe)
            fn[r, c], fe[r, c] = vn, ve
    return grid(time_us, (n0 - half, e0 - half), cell_m, n,
                [("force_north", fn), ("force_east", fe), ("force_norm", np.hypot(fn, fe))])


def cylinder(north_m, east_m, radius_m, height_m, rgba):
    """A foxglove.CylinderPrimitive in ``ned``: a buoy from the water line up to ``height_m``."""
    h = max(float(height_m), 0.05)
    d = 2.0 * float(radius_m)
    return {"pose": fox_pose((north_m, east_m, -0.5 * h)), "size": fox_vector3((d, d, h)),
            "bottom_scale": 1.0, "top_scale": 1.0, "color": fox_color(rgba)}


def buoy_scene(time_us, tracks):
    """The buoy map (objects with north_m, east_m, radius_m, height_m, hits, role) as one SceneEntity."""
    entity = scene_entity(time_us, "buoys", texts=[
        text((t.north_m, t.east_m, -float(t.height_m) - 0.4), "%s %d" % (t.role, t.hits), 0.5, WHITE)
        for t in tracks])
    entity["cylinders"] = [cylinder(t.north_m, t.east_m, t.radius_m, t.height_m,
                                    ROLE_RGBA.get(t.role, ROLE_RGBA["obstacle"])) for t in tracks]
    return entity


def decision_scene(time_us, north_m, east_m, heading_ref_rad, speed_ref_mps, throttles, destination=None,
                   path_ne_m=None):
    """The decision's SceneEntities: the reference arrow and throttles, the destination, the look-ahead path."""
    length = max(REFERENCE_SPAN_S * float(speed_ref_mps), 0.3)
    arrow = {"pose": fox_pose((north_m, east_m, -0.5), quat_from_euler(0.0, 0.0, float(heading_ref_rad))),
             "shaft_length": 0.75 * length, "shaft_diameter": 0.25, "head_length": 0.25 * length,
             "head_diameter": 0.6, "color": fox_color(REFERENCE_RGBA)}
    ref = scene_entity(time_us, "reference", texts=[
        text((north_m, east_m, -2.5), "ref %.0f deg %.2f m/s  thr L %.2f R %.2f" % (
            math.degrees(heading_ref_rad), speed_ref_mps, throttles[0], throttles[1]), 0.5, WHITE)])
    ref["arrows"] = [arrow]
    entities = [ref]
    if destination is not None:
        entities.append(scene_entity(time_us, "destination", spheres=[
            sphere((destination[0], destination[1], 0.0), 1.5, DESTINATION_RGBA)]))
    if path_ne_m:
        entities.append(scene_entity(time_us, "lookahead", lines=[
            line([(p[0], p[1], -0.3) for p in path_ne_m], 0.15, PATH_RGBA)]))
    return entities


class BoatViews:
    """The views part of the WAM-V app (module docstring). ``app``: the ``boards.wamv.app.WamvApp`` (its
    ``estimation``, ``helm``, ``perception``); ``view``: ``view(topic, time_us, schema_name, msg)``."""

    def __init__(self, app, view, rate_hz=2, max_points=5000, vote_cell_m=1.25, field_cell_m=2.0,
                 field_extent_m=25.0):
        self.app, self.view, self.rate_hz = app, view, rate_hz
        self.max_points, self.vote_cell_m = max_points, vote_cell_m
        self.field_cell_m, self.field_extent_m = field_cell_m, field_extent_m
        self._static = False
        self._frame = None            # the last sweep drawn
        self._decision_us = None      # the last decision drawn
        self._lookup = None
        self._lookup_key = None
        self.views = 0                # view messages written
        self.node = None

    def attach(self, node):
        self.node = node
        node.every("views", self.rate_hz, self._views)

    def _emit(self, topic, time_us, schema, msg):
        self.view(PREFIX + topic, time_us, schema, msg)
        self.views += 1

    def _perception(self):
        """The app's perception part: its own, or one a scenario added to its node as "perception"."""
        if self.app.perception is not None:
            return self.app.perception
        try:
            return self.node.part("perception")
        except KeyError:
            return None

    def _views(self, now_us):
        app = self.app
        ekf = app.estimation.ekf
        if not ekf.initialized:
            return
        if not self._static:
            self._emit("tf_static", now_us, FRAME_TRANSFORM, {
                "timestamp": fox_time(now_us), "parent_frame_id": WORLD_FRAME, "child_frame_id": NED_FRAME,
                "translation": fox_vector3((0.0, 0.0, 0.0)), "rotation": fox_quaternion(QUAT_NED_TO_WORLD_WXYZ)})
            self._static = True
        n, e, yaw = app.estimated_pose()
        q = quat_from_euler(0.0, 0.0, yaw)
        self._emit("tf", now_us, FRAME_TRANSFORM, {
            "timestamp": fox_time(now_us), "parent_frame_id": NED_FRAME, "child_frame_id": BODY_FRAME,
            "translation": fox_vector3((n, e, 0.0)), "rotation": fox_quaternion(q)})
        self._emit("estimate", now_us, POSE_IN_FRAME, {"timestamp": fox_time(now_us), "frame_id": NED_FRAME,
                                                       "pose": fox_pose((n, e, 0.0), q)})
        perception = self._perception()
        if perception is not None:
            last = perception.last_frame
            if last is not None and last[0] is not self._frame:
                frame, pose = last
                self._frame = frame
                self._emit("lidar", now_us, POINT_CLOUD,
                           point_cloud(now_us, sweep_in_ned(frame.points_body_m, pose[0], pose[1], pose[2],
                                                            self.max_points)))
            self._emit("buoys", now_us, SCENE_UPDATE, {"deletions": [], "entities": [
                buoy_scene(now_us, perception.map.confirmed())]})
        helm = app.helm
        part = helm.arbiter
        path = None
        decided = part is not None and part.last_decision is not None and part.last_decision[0] != self._decision_us
        if decided:
            self._decision_us = part.last_decision[0]
            arb = part.arbiter
            votes = getattr(arb, "last_votes", None)
            field = getattr(arb, "last_field", None)
            if votes is not None:
                key = (votes["headings"], votes["rings"], votes["range_step_m"])
                if key != self._lookup_key:
                    self._lookup = polar_lookup(key[0], key[1], key[2], self.vote_cell_m)
                    self._lookup_key = key
                self._emit("votes", now_us, GRID, vote_grid(now_us, votes, self.vote_cell_m, self._lookup))
            elif field is not None:
                path = field["path_ne_m"]
                self._emit("field", now_us, GRID, field_grid(now_us, arb, field["origin_ne_m"], self.field_cell_m,
                                                             self.field_extent_m))
        ref = helm.reference
        self._emit("decision", now_us, SCENE_UPDATE, {"deletions": [], "entities": decision_scene(
            now_us, n, e, ref[0], ref[1], app.estimation.commands,
            None if part is None else part.destination, path)})

    def report(self):
        return {"views": self.views}
