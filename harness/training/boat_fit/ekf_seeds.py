"""Seeds of the fitting windows: the boat EKF (``onboard.estimators.boat_ekf``) run over a log
(RobotX AAVS III-B step 3: "an estimate of what the boat is doing" at each window's first fix).

Row i of the log: the measurements at t_i are fused (GNSS fix where present, heading, yaw rate), the
state is recorded, then the filter predicts to t_i+1 with the row's thrusts. The filter starts at the
first row with a fix (position from it, yaw from the heading); rows before have NaN states.
"""
import math

import numpy as np

from onboard.estimators.base import EstimatorInputError
from onboard.estimators.boat_ekf import BoatEkf
from onboard.vessel.samples import HeadingSample, PositionSample, ThrustSample, YawRateSample


def ekf_states(log, ekf=None, params=None, on_row=None, fixes=None):
    """(rows, 6) EKF states at every row of ``log`` (model slots); ``ekf``: BoatEkf settings, ``params``:
    nine constants overriding its model (e.g. the previous fit, for the paper's EKF -> fit alternation);
    ``on_row(i, filter)``: called after row i's state is recorded, before the filter predicts to row
    i + 1 (it may change ``filter.params``: the online fit of ``vessel_rls``); ``fixes``: a list that gets
    (row, fused, NIS) of every GNSS fix the running filter was given (NIS NaN unless fused by an update;
    not fused: gated, or starting/restarting the filter). Also returns the filter's counters:
    (states, counters)."""
    cfg = dict(ekf or {})
    if params is not None:
        cfg["model"] = {"c%d" % (i + 1): float(v) for i, v in enumerate(params)}
    f = BoatEkf(cfg)
    # the columns as Python lists (the same float values; scalar access to lists is what the loop needs)
    t_us = np.round(np.asarray(log["time_s"], float) * 1e6).astype(np.int64).tolist()
    n = len(t_us)
    rows = []
    north, east = _floats(log["gnss_north_m"]), _floats(log["gnss_east_m"])
    yaw, rate = _floats(log["yaw_rad"]), _floats(log["yaw_rate_radps"])
    t_l, t_r = _floats(log["thrust_left_n"]), _floats(log["thrust_right_n"])
    nan_row = [math.nan] * 6
    finite = math.isfinite
    for i in range(n):
        t = t_us[i]
        try:
            if finite(yaw[i]):
                f.update_heading(HeadingSample(t, yaw[i]))
            if finite(north[i]) and finite(east[i]):
                was_running = f.initialized
                updates = f.updates
                fused = f.update_position(PositionSample(t, (north[i], east[i])))
                if fixes is not None and was_running:
                    by_update = fused and f.updates > updates
                    fixes.append((i, by_update, f.last_nis if by_update else float("nan")))
            if f.initialized and finite(rate[i]):
                f.update_yaw_rate(YawRateSample(t, rate[i]))
        except EstimatorInputError:
            pass
        rows.append(f.x if f.initialized else nan_row)
        if on_row is not None:
            on_row(i, f)
        if i + 1 < n:
            try:
                f.predict(ThrustSample(t_us[i + 1], t_l[i], t_r[i]))
            except EstimatorInputError:
                pass
    states = np.array(rows, dtype=float).reshape(n, 6)
    return states, f.counters()


def _floats(column):
    return np.asarray(column, dtype=float).tolist()
