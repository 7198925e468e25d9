"""The WAM-V's two electric outboards as simulated motor controllers on pseudo-terminals, commanded over
the VESC UART protocol by the boat's driver (``onboard.vessel.outboards.VescOutboards``), with an
injectable motor interface: the RobotX AAVS paper's hardware-in-the-loop finding (IV: the first motor
interface, mimicking a separate Torqeedo controller, had "an unacceptable amount of lag") reproduced and
measured.

Each outboard is a :class:`harness.sim.vesc.SimVesc` on its own :class:`harness.sim.vesc.SimVescPort`
pty, behind an interface (:class:`InterfaceVesc`) that

- holds every motor command (SetRPM, SetCurrent, ...) for ``latency_s`` after it arrives, then
- hands the latest due command to the motor only at its own update ticks, ``update_hz`` (e.g. a tiller
  interface forwarding speed at 3 Hz);

the motor's shaft follows its speed set-point as a first-order lag (``lag_tau_s``, the SimVesc speed
loop, unsaturated); the thrust is the thruster's static curve (``onboard.vessel.thrust_map``, the truth
vessel's ``thrusters`` block) of the shaft speed as a fraction of ``max_erpm``, zero inside the dead
band, times the side's efficiency; a released or stopped motor (SetCurrent 0, or its own command
timeout) gives no thrust (the propeller freewheels). Telemetry (GetValues) is answered at once.

Lockstep, no wall time: the harness calls ``service(now_us)`` (the controllers read their UARTs, answer,
queue commands) and ``step(dt_s, now_us)`` (due commands applied, motors advanced over [now, now + dt),
thrusts returned) from its simulated clock; :func:`lag_experiment` runs the driver, the ptys and the
motors that way and :func:`estimate_lag_s` estimates the command-to-telemetry lag by cross-correlation.
"""
import math
import os
import select
import shutil
import tempfile

import numpy as np

from harness.sim.vesc import DEFAULTS as SIM_VESC_DEFAULTS, MODE_CURRENT, MODE_NONE, SimVesc, SimVescPort
from onboard.comms.transport import SerialTransport
from onboard.comms.vesc import codec
from onboard.core.settings import NON_NEGATIVE, POSITIVE, checked, int_at_least
from onboard.vessel import thrust_map as tm
from onboard.vessel.outboards import SIDES, VescOutboards

UART_BAUD = 115200
# motor commands the interface delays (telemetry and keep-alive requests are answered at once)
MOTOR_COMMANDS = (codec.COMM_SET_DUTY, codec.COMM_SET_RPM, codec.COMM_SET_CURRENT, codec.COMM_SET_CURRENT_BRAKE)

DEFAULTS = {
    "update_hz": 100.0,         # the interface hands commands to the motor at this rate
    "latency_s": 0.0,           # a command waits this long in the interface before it is due
    "lag_tau_s": 0.4,           # shaft speed time constant (first-order lag); the truth vessel's thruster lag
    "max_erpm": 10000.0,        # eRPM at full throttle (the driver's setting too)
    "timeout_ms": 1000,         # the controller's own command timeout (released when commands stop)
}
SETTING_RANGES = {"update_hz": POSITIVE, "latency_s": NON_NEGATIVE, "lag_tau_s": NON_NEGATIVE,
                  "max_erpm": POSITIVE, "timeout_ms": int_at_least(0)}
# thruster block keys used here (the truth vessel's ``thrusters``): curve, dead band, efficiencies
THRUSTER_DEFAULTS = dict(tm.DEFAULTS, dead_band=0.0, efficiency_left=1.0, efficiency_right=1.0)


class InterfaceVesc(SimVesc):
    """A SimVesc behind a motor interface with latency and an update rate (module docstring)."""

    def __init__(self, config, latency_s, update_hz):
        SimVesc.__init__(self, config)
        self.latency_us = int(round(latency_s * 1e6))
        self.update_us = max(1, int(round(1e6 / update_hz)))
        self.next_update_us = 0
        self.queue = []                     # (due_us, payload) in arrival order
        self.applied = []                   # (time_us, command id, value) handed to the motor
        self.telemetry_requests = 0         # COMM_GET_VALUES requests answered

    def handle(self, payload, now_us):
        if payload and payload[0] == codec.COMM_GET_VALUES:
            self.telemetry_requests += 1
        if payload and payload[0] in MOTOR_COMMANDS:
            self.queue.append((now_us + self.latency_us, bytes(payload)))
            self._feed(now_us)              # the interface itself keeps the link alive
            return None
        return SimVesc.handle(self, payload, now_us)

    def step(self, dt_s, now_us):
        if now_us >= self.next_update_us:
            while self.next_update_us <= now_us:
                self.next_update_us += self.update_us
            due = [p for t, p in self.queue if t <= now_us] if self.queue else None
            if due:
                self.queue = [(t, p) for t, p in self.queue if t > now_us]
                payload = due[-1]           # the latest due command wins
                SimVesc.handle(self, payload, now_us)
                cmd, value = codec.decode_command(payload)
                self.applied.append((now_us, cmd, value))
        SimVesc.step(self, dt_s, now_us)


class SimOutboards:
    """The two simulated outboards, their ptys and the thrust they give. ``interface``: DEFAULTS overrides;
    ``thrusters``: the truth vessel's ``thrusters`` block (``harness.sim.wamv``; static curve, dead band,
    efficiencies); ``lag_tau_s`` of the interface settings replaces the block's thruster lag. ``paths``:
    {"left"|"right": the pty (symlink) the driver opens}. Call :meth:`close` to release the ptys."""

    def __init__(self, interface=None, thrusters=None, tmp_prefix="wamv-outboards-"):
        self.cfg = cfg = checked(DEFAULTS, SETTING_RANGES, interface, "wamv outboards")
        thr = dict(THRUSTER_DEFAULTS)
        thr.update({k: v for k, v in (thrusters or {}).items() if k in THRUSTER_DEFAULTS})
        self.curve = tm.ThrustMap({k: thr[k] for k in tm.DEFAULTS}, "wamv outboards")
        self.dead_band = float(thr["dead_band"])
        self.efficiency = {"left": float(thr["efficiency_left"]), "right": float(thr["efficiency_right"])}
        self.tmpdir = tempfile.mkdtemp(prefix=tmp_prefix)
        self.ports = {}
        try:
            vesc_cfg = dict(SIM_VESC_DEFAULTS, speed_time_constant_s=max(cfg["lag_tau_s"], 1e-6),
                            max_erpm=cfg["max_erpm"], current_limit_a=1e9, accel_erpm_per_s_per_a=1e6,
                            coast_time_constant_s=1e6, timeout_ms=cfg["timeout_ms"])
            self.sims = {}
            for k, side in enumerate(SIDES):
                self.sims[side] = InterfaceVesc(dict(vesc_cfg, controller_id=k + 1), cfg["latency_s"], cfg["update_hz"])
                self.ports[side] = SimVescPort(self.sims[side], link_path=os.path.join(self.tmpdir, "outboard-" + side))
        except Exception:
            self.close()
            raise
        self.paths = {side: self.ports[side].path for side in SIDES}
        self.thrust_n = (0.0, 0.0)

    def driver(self, config=None):
        """A :class:`VescOutboards` on these ptys (opened with pyserial, the real serial path)."""
        links = {side: (lambda path=self.paths[side]: SerialTransport(path, UART_BAUD).open()) for side in SIDES}
        return VescOutboards(links, dict({"max_erpm": self.cfg["max_erpm"]}, **(config or {})))

    def service(self, now_us):
        """The controllers read their UARTs: telemetry answered, motor commands queued. One ``select`` over
        the plugged ptys first (a pty's poll, like its read, first flushes what the runtime wrote), so a
        step with nothing written costs one system call; the ports with bytes then read, left first."""
        ports = self.ports
        fds = [ports[side].pty.master_fd for side in SIDES if ports[side].plugged]
        if not fds:
            return
        ready = select.select(fds, [], [], 0.0)[0]
        if ready:
            for side in SIDES:
                port = ports[side]
                if port.plugged and port.pty.master_fd in ready:
                    port.service(now_us)

    def throttle(self, side):
        """Shaft speed of one outboard as a fraction of full throttle (+ forward)."""
        return self.sims[side].erpm / self.cfg["max_erpm"]

    def released(self, side):
        """True when the motor gives no torque (released, or SetCurrent 0: a stop): the propeller
        freewheels and gives no thrust."""
        sim = self.sims[side]
        return sim.mode == MODE_NONE or (sim.mode == MODE_CURRENT and sim.setpoint == 0.0)

    def _thrust(self, side):
        n = self.throttle(side)
        if abs(n) <= self.dead_band or self.released(side):
            return 0.0
        return self.efficiency[side] * self.curve.static(n)

    def step(self, dt_s, now_us):
        """Apply the due commands and advance both motors over [now, now + dt); (T_l, T_r) in N over it."""
        for side in SIDES:
            self.sims[side].step(dt_s, now_us)
        self.thrust_n = (self._thrust("left"), self._thrust("right"))
        return self.thrust_n

    def report(self):
        return {"ports": {side: self.ports[side].report() for side in SIDES},
                "timeouts": {side: self.sims[side].timeouts for side in SIDES}}

    def close(self):
        for port in self.ports.values():
            port.close()
        self.ports = {}
        shutil.rmtree(self.tmpdir, ignore_errors=True)


# ---------------------------------------------------------------------------------------------- lag
def _held(values):
    """Missing (NaN) samples replaced by the last one before (0 before the first)."""
    out = np.array(values, float)
    for j in range(out.shape[1]):
        last = 0.0
        for k in range(out.shape[0]):
            if math.isfinite(out[k, j]):
                last = out[k, j]
            else:
                out[k, j] = last
    return out


def command_sequence(duration_s, control_hz, rng, hold_s=(0.3, 1.5), low=-0.3, high=1.0):
    """Seeded throttle commands (left, right) per control period: each side holds a uniform random
    throttle in [low, high] for a uniform random ``hold_s``, independently (a rich excitation)."""
    n = int(round(duration_s * control_hz))
    out = np.empty((n, 2))
    for j in range(2):
        k = 0
        while k < n:
            hold = max(1, int(round(float(rng.uniform(*hold_s)) * control_hz)))
            out[k:k + hold, j] = float(rng.uniform(low, high))
            k += hold
    return out


def estimate_lag_s(command, telemetry, period_s, max_lag_s=1.0):
    """The lag (s) from the commands to the telemetry, both sampled every ``period_s`` on one grid:
    ``command[k]`` sent at t_k, ``telemetry[k]`` the motor at t_k before that command can act (requested at
    t_k). The change commanded at t_k is cmd[k] - cmd[k-1]; the motion during [t_k, t_k+1] is
    tel[k+1] - tel[k]; the lag m * period maximising their normalised cross-correlation
    sum_k d_cmd[k] d_tel[k + m] says in which period the response is largest: the first whole period after
    the true lag (a first-order shaft lag makes the partial period before it smaller), so the estimate is
    (m - 1/2) period, at least 0: within half a period of the true lag for a lag time constant of a few
    periods. Arrays (ticks,) or (ticks, channels)."""
    cmd = np.asarray(command, float)
    tel = np.asarray(telemetry, float)
    if cmd.ndim == 1:
        cmd, tel = cmd[:, None], tel[:, None]
    c = np.diff(cmd, axis=0)[:-1]                 # changes commanded at t_1 .. t_N-2
    y = np.diff(tel, axis=0)[1:]                  # motion during [t_1, t_2] .. [t_N-2, t_N-1]
    m_max = int(round(max_lag_s / period_s))
    n = len(c)
    best, best_m = -math.inf, 0
    for m in range(0, min(m_max, n - 2) + 1):
        a, b = c[:n - m], y[m:]
        den = math.sqrt(float((a * a).sum()) * float((b * b).sum()))
        corr = float((a * b).sum()) / den if den > 0 else 0.0
        if corr > best:
            best, best_m = corr, m
    return max(0.0, (best_m - 0.5) * period_s)


LAG_PHYSICS_HZ = 100.0            # the lag experiment's physics rate (Hz) unless given


def lag_periods_us(control_hz, physics_hz=LAG_PHYSICS_HZ):
    """(physics step, control period) in whole us of the lag experiment; ValueError unless both are whole
    microseconds and the control period a whole multiple of the step (a control tick between two physics steps
    would never be sent, nor its telemetry stamped)."""
    dt_us = int(round(1e6 / physics_hz))
    ctrl_us = int(round(1e6 / control_hz))
    if dt_us * physics_hz != 1e6 or ctrl_us * control_hz != 1e6 or ctrl_us % dt_us:
        raise ValueError("lag experiment: the control period (1 / %r Hz) must be a whole multiple of the physics "
                         "step (1 / %r Hz), both whole microseconds" % (control_hz, physics_hz))
    return dt_us, ctrl_us


def lag_experiment(latency_s, seed=0, duration_s=30.0, control_hz=10.0, physics_hz=LAG_PHYSICS_HZ, interface=None,
                   thrusters=None):
    """Command the simulated outboards over their ptys with the driver, in lockstep: every control tick the
    driver polls telemetry and sends the tick's throttles (:func:`command_sequence`, seeded); the
    controllers service their UARTs and the motors step at ``physics_hz``. Returns {"command" (ticks, 2),
    "telemetry" (ticks, 2) throttles stamped at each tick (NaN where none came), "thrust_n" (steps, 2),
    "t_s" (steps,) step start times, "applied" {side: [(time_us, cmd, value)]} commands handed to the
    motors, "lag_s" the estimate of :func:`estimate_lag_s` (missing telemetry held), "report"}. A control period
    that is not a whole multiple of the physics step is a ValueError."""
    dt_us, ctrl_us = lag_periods_us(control_hz, physics_hz)
    cfg = dict(interface or {}, latency_s=latency_s)
    sim = SimOutboards(cfg, thrusters)
    try:
        drv = sim.driver()
        cmds = command_sequence(duration_s, control_hz, np.random.default_rng(seed))
        ticks = len(cmds)
        tel = {side: {} for side in SIDES}
        drv.start(0)
        steps = int(round(duration_s * physics_hz))
        thrust = np.empty((steps, 2))
        t_s = np.empty(steps)
        for k in range(steps):
            now = k * dt_us
            if now % ctrl_us == 0 and now // ctrl_us < ticks:
                for s in drv.poll(now):
                    tel[s.side][s.time_us] = s.throttle
                j = now // ctrl_us
                drv.command(cmds[j, 0], cmds[j, 1], now)
            sim.service(now)
            thrust[k] = sim.step(dt_us * 1e-6, now)
            t_s[k] = now * 1e-6
        for s in drv.poll(steps * dt_us):
            tel[s.side][s.time_us] = s.throttle
        telemetry = np.array([[tel[side].get(j * ctrl_us, np.nan) for side in SIDES] for j in range(ticks)])
        lag = estimate_lag_s(cmds, _held(telemetry), 1.0 / control_hz) if np.isfinite(telemetry).any() else None
        out = {"command": cmds, "telemetry": telemetry, "thrust_n": thrust, "t_s": t_s,
               "applied": {side: list(sim.sims[side].applied) for side in SIDES}, "lag_s": lag,
               "report": {"driver": drv.report(), "sim": sim.report()}}
        drv.close()
        return out
    finally:
        sim.close()
