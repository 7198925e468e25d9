"""Runs a ground-robot runtime from line-protocol messages (pure, MicroPython-compatible).

The same object runs on a MicroPython board (lines from its USB serial link) and
on CPython (lines from a file or the harness), so their outputs can be compared
number for number. Protocol: :mod:`onboard.comms.line_link`.

In *lockstep* mode (``H,lockstep``) the host drives time: ``I``/``P`` frames go
to the runtime's driver entry points (``on_imu``/``on_pose``), ``T,now_us`` runs
one scheduler tick at ``now_us`` and answers an ``S`` frame with the estimate,
its pose variances and the wheel command. A bad line is answered with ``X``,
counted, and changes nothing.

Signed links: with a ``verifier`` (:class:`onboard.comms.signed_frame.FrameVerifier`) every line must
be a signed line (:func:`onboard.comms.line_link.sign_line`); with ``require_signed`` and no verifier
(a board whose link key was never provisioned) every line is refused. Refused lines are counted in
``auth_rejected`` (and by the verifier, by reason) and answered ``X``; so is a line whose counter mark the
verifier could not save (an OSError of its ``persist``: a full or failing flash).
"""
from onboard.comms import line_link as ll
from onboard.core.samples import ImuSample, PoseSample, SampleError
# the S frame carries the planar EKF's state, read by its named slots
from onboard.estimators.planar_ekf import EAST, N_STATE, NORTH, SPEED, YAW


class LinkRuntime:
    """runtime: a GroundRobotRuntime with a planar EKF (or anything with on_imu/on_pose/step/estimator/last_cmd
    and the counters read below)."""

    def __init__(self, runtime, verifier=None, require_signed=False):
        self.runtime = runtime
        self.verifier = verifier
        self.require_signed = require_signed or verifier is not None
        self.auth_rejected = 0
        self.bad_lines = 0
        self.lines = 0
        self.ticks = 0
        self.mode = None

    def handle_line(self, line):
        """One received line -> list of reply lines (bytes)."""
        self.lines += 1
        if self.require_signed:
            try:
                if self.verifier is None:
                    raise ll.LinkError("no link key on this board (deploy with --link-key)")
                line = ll.open_signed_line(self.verifier, line)
            except ll.LinkError as exc:
                self.auth_rejected += 1
                return [ll.encode("X", [str(exc).replace(",", ";")])]
            except OSError as exc:
                # the verifier could not save its counter mark (flash full or failing): the line is not
                # accepted and the verifier is unchanged (signed_frame.FrameVerifier.open)
                self.auth_rejected += 1
                return [ll.encode("X", [("counter mark not saved: %s" % (exc,)).replace(",", ";")])]
        try:
            tag, fields = ll.decode(line)
            return self._dispatch(tag, fields)
        except (ll.LinkError, SampleError) as exc:
            self.bad_lines += 1
            return [ll.encode("X", [str(exc).replace(",", ";")])]

    def _dispatch(self, tag, fields):
        rt = self.runtime
        if tag == "I":
            rt.on_imu(ll.imu_from_fields(fields, ImuSample))
            return []
        if tag == "P":
            rt.on_pose(ll.pose_from_fields(fields, PoseSample))
            return []
        if tag == "T":
            if len(fields) != 1:
                raise ll.LinkError("T frame needs 1 field")
            now_us = ll.parse_int(fields[0])
            rt.step(now_us)
            self.ticks += 1
            return [ll.encode("S", self.state_fields(now_us))]
        if tag == "H":
            self.mode = fields[0] if fields else "lockstep"
            return [ll.encode("H", [self.mode])]
        if tag == "Q":
            return [ll.encode("R", self.report_fields())]
        raise ll.LinkError("unknown tag %r" % (tag,))

    def state_fields(self, now_us):
        est = self.runtime.estimator
        x = est.x
        P = est.P
        cmd = self.runtime.last_cmd
        left = cmd.left_radps if cmd is not None else 0.0
        right = cmd.right_radps if cmd is not None else 0.0
        vals = [x[NORTH], x[EAST], x[YAW], x[SPEED], P[NORTH * N_STATE + NORTH], P[EAST * N_STATE + EAST],
                P[YAW * N_STATE + YAW], left, right]
        return [str(now_us)] + [ll.f64_hex(v) for v in vals]

    def report_fields(self):
        rt = self.runtime
        c = rt.estimator.counters()
        out = []
        for key, val in (("lines", self.lines), ("bad_lines", self.bad_lines), ("ticks", self.ticks),
                         ("predicts", c["predicts"]), ("updates", c["updates"]),
                         ("gated", c["gated"]), ("rejected", rt.rejected_samples),
                         ("stops", rt.stop_commands), ("auth_rejected", self.auth_rejected)):
            out.append(key)
            out.append(str(val))
        return out


def runtime_config(board):
    """GroundRobotRuntime settings from a board's constants (the board module or any object)."""
    return {"imu_rate_hz": board.IMU_RATE_HZ, "aiding_rate_hz": board.AIDING_RATE_HZ,
            "control_rate_hz": board.CONTROL_RATE_HZ, "wheelbase_m": board.WHEELBASE_M,
            "wheel_radius_m": board.WHEEL_RADIUS_M, "max_wheel_radps": board.MAX_WHEEL_RADPS}


STATE_KEYS = ("north_m", "east_m", "yaw_rad", "speed_mps", "var_north_m2", "var_east_m2",
              "var_yaw_rad2", "left_radps", "right_radps")


def parse_state(fields):
    """S-frame fields -> (now_us, dict of STATE_KEYS -> float) on the host side."""
    if len(fields) != 1 + len(STATE_KEYS):
        raise ll.LinkError("S frame needs %d fields" % (1 + len(STATE_KEYS)))
    vals = {}
    for i, key in enumerate(STATE_KEYS):
        vals[key] = ll.hex_f64(fields[1 + i])
    return ll.parse_int(fields[0]), vals
