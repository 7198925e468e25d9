"""The runtime's Crazyflie driver on the official cflib (0.1.34): one drone or a swarm.

    drv = CrazyflieDriver("radio://0/80/2M/E7E7E7E7E7", config, watchdog=runtime_watchdog)
    drv.connect()                       # link, TOCs, params from the board config, log blocks
    samples = drv.poll(now_us)          # NavState / BatterySample / RangeSample since last poll
    drv.take_off(now_us); drv.command(VelocitySetpoint(...)); drv.step(now_us)  # at setpoint_rate_hz
    drv.land(now_us)

Time is passed in (``now_us``); the driver reads no clock and never sleeps in ``poll`` or
``step``. Only ``connect`` blocks, with bounded waits (cflib's own ``open_link`` has none).
Frames: the Crazyflie world is x forward/north, y left/west, z up, yaw CCW in degrees;
the runtime is NED with yaw towards east (CONVENTIONS.md). Conversions happen here only:
``pos_ned = (x, -y, -z)``, ``vel_ned = (vx, -vy, -vz)``, ``euler_ned = (roll, legacy
pitch, -yaw)`` in radians (stateEstimate.pitch is the firmware's legacy nose-up pitch).

Safety:
* ``step(now_us)`` must be called at ``setpoint_rate_hz`` (default 50 Hz; the firmware
  levels out after 500 ms without a setpoint and cuts the motors after 2 s). While
  flying it always sends a setpoint: the runtime's last command, or zero velocity (hold)
  when that command is older than ``command_timeout_s``.
* Link loss: every log packet feeds the watchdog input ``cf_link:<name>``. When no log
  packet arrived for ``link_timeout_s`` (or cflib reports the link lost) the driver stops
  commanding altogether (nothing can land the drone over a dead link; the firmware's
  own setpoint timeout then levels it and stops the motors) and reports a ``DriverFault``
  ("link_lost") at that ``step``: within ``link_timeout_s`` + one setpoint period of the
  last log packet polled.
* Failsafe: when the watchdog's failsafe engages for any other reason while flying, the
  driver sends notify-setpoint-stop, lands (high-level commander land, or a hover-setpoint
  descent when ``land_via_high_level`` is off) and disarms, and reports "failsafe:<reasons>".
Bad commands (NaN, infinite) are refused and counted; state is kept.
"""
import collections
import math
import struct
import threading
import warnings

from boards.crazyflie.board import CrazyflieConfigError, validate
from boards.crazyflie.samples import BatterySample, DriverFault
from onboard.core.linalg import is_finite
from onboard.core.settings import is_number
from onboard.core.samples import NavState, RangeSample
from onboard.runtime.watchdog import Watchdog

DISCONNECTED = "disconnected"
CONNECTING = "connecting"
IDLE = "idle"                 # connected, on the ground
TAKING_OFF = "taking_off"
FLYING = "flying"
LANDING = "landing"
LANDED = "landed"
LINK_LOST = "link_lost"
CLOSED = "closed"

# close(): the longest wait for cflib's packet dispatcher to end before closing the link (it ends at the
# next packet; on a quiet link it would have held close_link up as long anyway: its read waits up to 1 s)
DISPATCHER_STOP_S = 0.5

_cflib_lock = threading.Lock()
_cflib_ready = False


class CrazyflieLinkError(RuntimeError):
    """Connecting failed or timed out (no drone at the URI, TOC download stuck, ...)."""


def init_cflib():
    """cflib.crtp.init_drivers() exactly once per process (it appends drivers on every call)."""
    global _cflib_ready
    with _cflib_lock:
        if not _cflib_ready:
            import cflib.crtp
            cflib.crtp.init_drivers()
            _cflib_ready = True


def _clamp(v, lim):
    return max(-lim, min(lim, v))


class CrazyflieDriver:
    """One Crazyflie over cflib; see the module docstring for the contract."""

    def __init__(self, uri, config=None, watchdog=None, name=None):
        self.uri = uri
        self.name = name or uri
        self.cfg = validate(config)
        self.watchdog = watchdog if watchdog is not None else Watchdog()
        self.failsafe = self.watchdog.failsafe
        self.link_input = "cf_link:" + self.name
        self.watchdog.add_input(self.link_input, int(round(self.cfg["link_timeout_s"] * 1e6)))
        self.setpoint_period_us = int(round(1e6 / self.cfg["setpoint_rate_hz"]))
        self.cf = None
        self.state = DISCONNECTED
        self.faults = []
        self.nav = None
        self.battery = None
        self.ranges = {}
        self.params_read_back = {}
        self.log_packets_received = 0
        self.packets_sent = 0
        self.stats = {"setpoints_sent": 0, "rejected_commands": 0, "stale_command_steps": 0, "bad_log_values": 0,
                      "log_errors": 0, "max_setpoint_gap_us": 0, "notify_stops": 0, "landings": 0}
        self._rx = collections.deque()
        self._cond = threading.Condition()
        self._link_error = None
        self._connected_ev = threading.Event()
        self._params_ev = threading.Event()
        self._euler_ned_rad = (0.0, 0.0, 0.0)
        self._cmd = None
        self._phase_t0_us = 0
        self._phase_z0_m = 0.0
        self._land_reason = None
        self._last_send_us = None
        self._link_started = False
        self._log_configs = []

    # ================================================================ connection
    def start_connect(self):
        """Open the link without waiting (call wait_connected next); lets a swarm connect in parallel.
        A driver whose link was closed or lost connects afresh (a lost link is closed first): link error,
        log blocks, received samples and the link's packet counts (``packets_sent``, ``log_packets_received``
        count from this link's opening); ``stats`` and ``faults`` keep counting. An open link raises
        CrazyflieLinkError (closing it would stop the motors: cflib's close_link sends zero thrust)."""
        if self.state not in (DISCONNECTED, CLOSED, LINK_LOST):
            raise CrazyflieLinkError("%s: the link is open (state %s): close() it before connecting again"
                                     % (self.uri, self.state))
        init_cflib()
        from cflib.crazyflie import Crazyflie

        if self.cf is not None and self.state == LINK_LOST:
            self.close()
        self._connected_ev = threading.Event()
        self._params_ev = threading.Event()
        with self._cond:
            self._link_error = None
            self._rx.clear()
            self.log_packets_received = 0
        self.packets_sent = 0
        self._log_configs = []
        self._link_started = False
        self._cmd = None
        self._euler_ned_rad = (0.0, 0.0, 0.0)
        self.nav = None
        self.battery = None
        self.ranges = {}
        self.params_read_back = {}
        cache = self.cfg["toc_cache_dir"] or None
        self.cf = Crazyflie(ro_cache=None, rw_cache=cache)
        self.cf.connected.add_callback(lambda _uri: self._connected_ev.set())
        self.cf.fully_connected.add_callback(lambda _uri: self._params_ev.set())
        self.cf.connection_failed.add_callback(self._on_link_error)
        self.cf.connection_lost.add_callback(self._on_link_error)
        self.cf.packet_sent.add_callback(self._on_sent)
        self.state = CONNECTING
        self.cf.open_link(self.uri)

    def wait_connected(self):
        """Wait (bounded) for TOCs and parameter values, write the board params, start the log blocks."""
        timeout = self.cfg["connect_timeout_s"]
        ok = self._connected_ev.wait(timeout) and self._params_ev.wait(timeout)
        if not ok or self._link_error is not None:
            why = self._link_error or "no answer within %.1f s" % timeout
            self.close()
            raise CrazyflieLinkError("cannot connect to %s: %s" % (self.uri, why))
        try:
            self._apply_params()
            self._start_logs()
        except (CrazyflieConfigError, CrazyflieLinkError):
            self.close()
            raise
        self.state = IDLE

    def connect(self):
        self.start_connect()
        self.wait_connected()
        return self

    def close(self):
        """Close the link. Note cflib's close_link sends a zero RPYT setpoint (motors off): land first."""
        if self.cf is not None:
            for lc in self._log_configs:
                try:
                    lc.data_received_cb.remove_callback(lc._driver_cb)
                except (ValueError, AttributeError):
                    pass
            # cflib's link statistics ping the drone every 0.1 s from a thread of their own: one ping after
            # close_link has closed the socket fails, and cflib's error path then joins that thread from
            # itself (RuntimeError, a traceback on stderr); stop it while the link is still open
            stats = getattr(self.cf, "link_statistics", None)
            if stats is not None:
                try:
                    stats.stop()
                except Exception:        # closing must not raise
                    pass
            # cflib's close_link closes the link, then joins its packet dispatcher thread, which is
            # blocked up to 1 s reading the closed link's queue: stop the dispatcher first, while the
            # link still delivers packets to wake it, and close_link does not wait for it
            incoming = getattr(self.cf, "incoming", None)
            if incoming is not None and incoming.is_alive():
                incoming.stop()
                incoming.join(DISPATCHER_STOP_S)
            try:
                self.cf.close_link()
            except Exception:            # closing a broken link must not raise
                pass
        self.state = CLOSED

    def _on_link_error(self, _uri, msg):
        with self._cond:
            self._link_error = str(msg).splitlines()[0] if msg else "link error"
            self._cond.notify_all()
        self._connected_ev.set()
        self._params_ev.set()

    def _on_sent(self, _pk):
        self.packets_sent += 1

    def _apply_params(self):
        """Write each configured parameter and wait for the drone's read-back of the value."""
        param = self.cf.param
        for name, value in self.cfg["params"].items():
            elem = param.toc.get_element_by_complete_name(name)
            if elem is None:
                raise CrazyflieConfigError("crazyflie.params: %s is not in the drone's parameter TOC" % name)
            if elem.get_readable_access() == "RO":
                raise CrazyflieConfigError("crazyflie.params: %s is read-only on the drone" % name)
            group, pname = name.split(".")
            done = threading.Event()
            got = {}

            def cb(_name, value_s, _got=got, _done=done):
                _got["v"] = value_s
                _done.set()

            param.add_update_callback(group=group, name=pname, cb=cb)
            try:
                try:
                    param.set_value(name, value)
                except (struct.error, OverflowError) as exc:      # cflib packs the value as the TOC type
                    raise CrazyflieConfigError("crazyflie.params: %s = %r does not fit the drone's %s parameter (%s)"
                                               % (name, value, elem.ctype, exc))
                if not done.wait(self.cfg["param_timeout_s"]):
                    # the firmware sends nothing back for a write it refuses (param_logic.c paramWriteProcess)
                    raise CrazyflieLinkError("no read-back of parameter %s from %s within %.1f s (the drone "
                                             "refused the write or the link lost it)"
                                             % (name, self.uri, self.cfg["param_timeout_s"]))
            finally:
                param.remove_update_callback(group=group, name=pname, cb=cb)
            back = float(got["v"])
            if abs(back - float(value)) > 1e-6 * max(1.0, abs(float(value))):
                raise CrazyflieConfigError("parameter %s: wrote %r, drone holds %r" % (name, value, got["v"]))
            self.params_read_back[name] = back

    def _start_logs(self):
        from cflib.crazyflie.log import LogConfig

        started = []
        for bname, block in self.cfg["log_blocks"].items():
            lc = LogConfig(name=bname, period_in_ms=block["period_ms"])
            for var in block["variables"]:
                lc.add_variable(var)
            try:
                self.cf.log.add_config(lc)
            except (KeyError, AttributeError) as exc:
                raise CrazyflieConfigError("crazyflie.log_blocks.%s: %s" % (bname, exc))
            ev = threading.Event()
            lc.started_cb.add_callback(lambda _lc, on, _ev=ev: on and _ev.set())
            lc.error_cb.add_callback(self._on_log_error)

            def data_cb(ts, data, _lc, _b=bname):
                self._on_log(_b, ts, data)

            lc._driver_cb = data_cb
            lc.data_received_cb.add_callback(data_cb)
            lc.start()
            self._log_configs.append(lc)
            started.append((bname, ev))
        for bname, ev in started:
            if not ev.wait(self.cfg["param_timeout_s"]):
                raise CrazyflieLinkError("log block %s did not start on %s" % (bname, self.uri))

    def _on_log(self, block, fw_time_ms, data):
        with self._cond:
            self._rx.append((block, fw_time_ms, data))
            self.log_packets_received += 1
            self._cond.notify_all()

    def _on_log_error(self, logconf, msg):
        self.stats["log_errors"] += 1

    def wait_log_count(self, count, timeout_s):
        """Wait (bounded) until ``count`` log packets arrived in total; False on timeout or link error."""
        with self._cond:
            return self._cond.wait_for(lambda: self.log_packets_received >= count or self._link_error is not None,
                                       timeout_s) and self._link_error is None

    # ================================================================ inputs
    def poll(self, now_us):
        """Samples (NavState, BatterySample, RangeSample) from the log packets received since the last poll."""
        out = []
        got = False
        while True:
            try:
                block, _fw_ms, data = self._rx.popleft()
            except IndexError:
                break
            got = True
            vals = [v for v in data.values() if isinstance(v, float)]
            if not is_finite(vals):
                self.stats["bad_log_values"] += 1
                continue
            if "stateEstimate.yaw" in data:
                self._euler_ned_rad = (math.radians(data.get("stateEstimate.roll", 0.0)),
                                       math.radians(data.get("stateEstimate.pitch", 0.0)),
                                       -math.radians(data["stateEstimate.yaw"]))
            if "stateEstimate.x" in data:
                pos = (data["stateEstimate.x"], -data["stateEstimate.y"], -data["stateEstimate.z"])
                if "stateEstimate.vx" in data:
                    # a level 2-D flight may leave vz out of its block (24 bytes hold x, y, z, vx, vy, yaw)
                    vel = (data["stateEstimate.vx"], -data["stateEstimate.vy"], -data.get("stateEstimate.vz", 0.0))
                else:
                    vel = self.nav.vel_ned_mps if self.nav is not None else (0.0, 0.0, 0.0)
                self.nav = NavState(now_us, pos, vel, self._euler_ned_rad)
                out.append(self.nav)
            if "pm.vbat" in data:
                self.battery = BatterySample(now_us, data["pm.vbat"], data.get("pm.state", 0))
                out.append(self.battery)
            if "ranging.state" in data:
                valid = data["ranging.state"]
                peers = self.cfg["range_peer_ids"]
                for j in range(min(8, len(peers))):
                    key = "ranging.distance%d" % j
                    if key in data and valid & (1 << j):
                        r = RangeSample(now_us, peers[j], data[key])
                        self.ranges[peers[j]] = r
                        out.append(r)
        if got and self.state not in (LINK_LOST, CLOSED):
            self.watchdog.feed(self.link_input, now_us)
            self._link_started = True
        return out

    def command(self, setpoint):
        """Latest runtime command (onboard.core.samples.VelocitySetpoint, NED); refused when not finite."""
        if not setpoint.is_finite():
            self.stats["rejected_commands"] += 1
            return False
        self._cmd = setpoint
        return True

    # ================================================================ flight phases
    def take_off(self, now_us, height_m=None):
        """Arm (if configured) and climb to ``height_m`` with hover setpoints over takeoff_time_s."""
        if self.state not in (IDLE, LANDED):
            return False
        if height_m is not None:
            if not (is_number(height_m) and height_m > 0):       # a finite int or float, not a bool
                self.stats["rejected_commands"] += 1
                return False
            self.cfg["flight_height_m"] = float(height_m)
        if self.cfg["arm"]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")      # cflib warns that protocol < 12 uses the legacy path
                self.cf.supervisor.send_arming_request(True)
        self.state = TAKING_OFF
        self._phase_t0_us = now_us
        self._phase_z0_m = self._height_m()
        return True

    def land(self, now_us, reason="commanded"):
        if self.state not in (TAKING_OFF, FLYING):
            return False
        self._begin_landing(now_us, reason)
        return True

    def _height_m(self):
        return -self.nav.pos_ned_m[2] if self.nav is not None else 0.0

    def _begin_landing(self, now_us, reason):
        self.state = LANDING
        self._land_reason = reason
        self._phase_t0_us = now_us
        self._phase_z0_m = self._height_m()
        self.stats["landings"] += 1
        if self.cfg["land_via_high_level"]:
            # hand over from low-level setpoints to the onboard high-level commander
            self.cf.commander.send_notify_setpoint_stop(self.cfg["notify_stop_remain_ms"])
            self.stats["notify_stops"] += 1
            self.cf.high_level_commander.land(0.0, self.cfg["land_time_s"])

    def _finish_landing(self, now_us):
        if not self.cfg["land_via_high_level"]:
            self.cf.commander.send_stop_setpoint()
            self.cf.commander.send_notify_setpoint_stop(0)
            self.stats["notify_stops"] += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.cf.supervisor.send_arming_request(False)
        self.state = LANDED

    def _fault(self, now_us, reason, detail=""):
        f = DriverFault(now_us, self.name, reason, detail)
        self.faults.append(f)
        return f

    # ================================================================ the setpoint loop
    def step(self, now_us):
        """Run one setpoint period; returns the DriverFaults raised at this step."""
        if self.state in (DISCONNECTED, CONNECTING, CLOSED, LINK_LOST):
            return []
        if not self._link_started:
            # grace: the link timeout counts from the first step after connecting
            self.watchdog.feed(self.link_input, now_us)
            self._link_started = True
        stale = self.watchdog.check(now_us)
        if self._link_error is not None or self.link_input in stale:
            self.state = LINK_LOST
            detail = self._link_error or "no log data for %.0f ms" % (self.cfg["link_timeout_s"] * 1e3)
            return [self._fault(now_us, "link_lost", detail)]
        faults = []
        if self.failsafe.engaged and self.state in (TAKING_OFF, FLYING):
            reasons = ",".join(sorted(self.failsafe.reasons)) or "latched"
            faults.append(self._fault(now_us, "failsafe:" + reasons, "safe stop: notify-stop, land, disarm"))
            self._begin_landing(now_us, "failsafe")
        if self.state == TAKING_OFF:
            s = min(1.0, (now_us - self._phase_t0_us) / (self.cfg["takeoff_time_s"] * 1e6))
            z = self._phase_z0_m + s * (self.cfg["flight_height_m"] - self._phase_z0_m)
            self._send_hover(now_us, 0.0, 0.0, 0.0, z)
            if s >= 1.0:
                self.state = FLYING
        elif self.state == FLYING:
            self._send_command(now_us)
        elif self.state == LANDING:
            self._step_landing(now_us)
        return faults

    def _step_landing(self, now_us):
        elapsed_s = (now_us - self._phase_t0_us) * 1e-6
        land_s = self.cfg["land_time_s"]
        if self.cfg["land_via_high_level"]:
            landed = self._height_m() < self.cfg["landed_height_m"] and elapsed_s >= 0.5 * land_s
            if landed or elapsed_s >= land_s + 1.0:
                self._finish_landing(now_us)
            return
        s = min(1.0, elapsed_s / land_s)
        self._send_hover(now_us, 0.0, 0.0, 0.0, self._phase_z0_m * (1.0 - s))
        if s >= 1.0:
            self._finish_landing(now_us)

    def _send_command(self, now_us):
        cmd = self._cmd
        if cmd is None or now_us - cmd.time_us > self.cfg["command_timeout_s"] * 1e6:
            self.stats["stale_command_steps"] += 1
            vn, ve, vd, yaw_rate = 0.0, 0.0, 0.0, 0.0
        else:
            vn, ve, vd = cmd.vel_ned_mps
            yaw_rate = cmd.yaw_rate_radps
        speed = math.hypot(vn, ve)
        if speed > self.cfg["max_speed_mps"]:
            vn *= self.cfg["max_speed_mps"] / speed
            ve *= self.cfg["max_speed_mps"] / speed
        vx, vy = vn, -ve                         # NED -> Crazyflie world (x north, y west)
        yawrate_degps = -math.degrees(yaw_rate)  # NED (towards east) -> CCW degrees
        if self.cfg["setpoint_mode"] == "velocity_world":
            vz = -vd + self.cfg["height_gain_1ps"] * (self.cfg["flight_height_m"] - self._height_m())
            vz = _clamp(vz, self.cfg["max_climb_mps"])
            self.cf.commander.send_velocity_world_setpoint(vx, vy, vz, yawrate_degps)
            self._sent(now_us)
        else:
            psi = -self._euler_ned_rad[2]        # CCW yaw of the body in the Crazyflie world
            bx = math.cos(psi) * vx + math.sin(psi) * vy
            by = -math.sin(psi) * vx + math.cos(psi) * vy
            self._send_hover(now_us, bx, by, yawrate_degps, self.cfg["flight_height_m"])

    def _send_hover(self, now_us, vx_body, vy_body, yawrate_degps, z_m):
        self.cf.commander.send_hover_setpoint(vx_body, vy_body, yawrate_degps, z_m)
        self._sent(now_us)

    def _sent(self, now_us):
        self.stats["setpoints_sent"] += 1
        if self._last_send_us is not None:
            gap = now_us - self._last_send_us
            if gap > self.stats["max_setpoint_gap_us"]:
                self.stats["max_setpoint_gap_us"] = gap
        self._last_send_us = now_us

    def report(self):
        return {"uri": self.uri, "state": self.state, "stats": dict(self.stats),
                "log_packets_received": self.log_packets_received, "packets_sent": self.packets_sent,
                "faults": [f.as_dict() for f in self.faults], "params": dict(self.params_read_back)}


class CrazyflieSwarm:
    """Several drones at once: connects them in parallel and steps them together."""

    def __init__(self, uris, config=None, watchdog=None, names=None):
        self.watchdog = watchdog if watchdog is not None else Watchdog()
        names = names or ["cf%d" % i for i in range(len(uris))]
        self.drivers = [CrazyflieDriver(u, config, self.watchdog, n) for u, n in zip(uris, names)]

    def __len__(self):
        return len(self.drivers)

    def __getitem__(self, i):
        return self.drivers[i]

    def connect(self):
        # with a TOC cache folder, cflib writes a drone's TOC file while the other connections read it (an
        # 8-drone swarm logged "Error while parsing cache file" and fetched the TOC again): the first drone
        # connects alone, so its TOC is in the cache, then the rest connect in parallel from it
        open_links = ["%s (%s)" % (d.uri, d.state) for d in self.drivers
                      if d.state not in (DISCONNECTED, CLOSED, LINK_LOST)]
        if open_links:       # before anything starts: no link is touched
            raise CrazyflieLinkError("links open, close() them before connecting again: %s" % ", ".join(open_links))
        cached = bool(self.drivers) and bool(self.drivers[0].cfg["toc_cache_dir"])
        batches = [self.drivers[:1], self.drivers[1:]] if cached else [self.drivers]
        errors = []
        for batch in batches:
            for d in batch:
                d.start_connect()
            for d in batch:
                try:
                    d.wait_connected()
                except (CrazyflieLinkError, CrazyflieConfigError) as exc:
                    errors.append(exc)
            if errors:
                break
        if errors:
            self.close()
            # a configuration mistake is reported as such (it is the same on every drone)
            kind = CrazyflieConfigError if any(isinstance(e, CrazyflieConfigError) for e in errors) \
                else CrazyflieLinkError
            raise kind("; ".join(str(e) for e in errors))
        return self

    def poll(self, now_us):
        return [d.poll(now_us) for d in self.drivers]

    def step(self, now_us):
        faults = []
        for d in self.drivers:
            faults.extend(d.step(now_us))
        return faults

    def take_off(self, now_us, height_m=None):
        return all([d.take_off(now_us, height_m) for d in self.drivers])

    def land(self, now_us):
        return [d.land(now_us) for d in self.drivers]

    def close(self, timeout_s=5.0):
        """Close every link in parallel (cflib's close waits up to 1 s per link for its threads)."""
        threads = [threading.Thread(target=d.close, name="cf-close-%s" % d.name, daemon=True)
                   for d in self.drivers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout_s)
