"""The commander of one simulated Crazyflie: setpoints in, vehicle commands out (crazyflie-firmware
commander.c, crtp_commander_rpyt.c, crtp_commander_generic.c, crtp_commander_high_level.c).

Low-level setpoints come on port 3 (roll/pitch/yaw-rate/thrust; cflib sends -pitch) and port 7 (the
generic commander: stop, velocity-world, hover, z-distance, position, full-state, manual, and the
legacy velocity/z-distance/hover types whose yaw rate has the opposite sign). The pitch on the wire is the
firmware's attitude.pitch, positive nose up (backwards): cflib's send_setpoint and send_setpoint_manual
negate their pitch argument, send_zdistance_setpoint does not. Port 7 channel 1 carries
notify-setpoints-stop. The high-level commander (port 8: take-off, land, go-to, stop) plans a straight
line from the current estimate to the goal in the given duration and tracks it; it runs only with
``commander.enHighLevel`` = 1, and a low-level setpoint keeps priority over it until notify-stop or the
watchdog. Trajectories and spirals are not simulated.

Watchdog (firmware COMMANDER_WDT_TIMEOUT_STABILIZE / _SHUTDOWN): no setpoint for 500 ms levels the
drone (horizontal velocity 0, height held), 2000 ms switches the motors off. Notify-stop back-dates the
last setpoint so that the shutdown comes ``remain_ms`` later unless another source takes over.

Units at the wire are the firmware's (m, m/s, degrees, deg/s CCW, thrust in 0..65535); the Crazyflie
world frame is x forward (= north), y left, z up, converted to the Drone2D's NED through ``vehicle``.
Attitude setpoints become a horizontal acceleration g * tan(tilt) (small-angle multirotor, tilt
clipped to 30 deg); thrust becomes a climb rate (thrust - 36000) / 24000 m/s, thrust 0 motors off.
"""
import math
import struct

from harness.sim.crazyflie import crtp
from harness.sim.vehicles.drone2d import V_CLIMB
from onboard.core.linalg import is_finite
from onboard.core.units import G_MPS2

COUNTERS = ("setpoints", "rejected_setpoints", "hl_commands", "hl_ignored", "notify_stops", "wdt_stabilize",
            "wdt_shutdown")
COMMANDER_WDT_STABILIZE_US = 500000     # firmware COMMANDER_WDT_TIMEOUT_STABILIZE
COMMANDER_WDT_SHUTDOWN_US = 2000000     # firmware COMMANDER_WDT_TIMEOUT_SHUTDOWN
HOVER_THRUST = 36000.0                  # thrust (0..65535) that holds height; stabilizer.thrust while flying
THRUST_PER_CLIMB_MPS = 24000.0          # thrust above HOVER_THRUST per m/s of climb rate
MAX_TILT_DEG = 30.0                     # roll/pitch setpoints are clipped to this
HL_COMMANDS = (crtp.HL_TAKEOFF, crtp.HL_LAND, crtp.HL_TAKEOFF_2, crtp.HL_LAND_2, crtp.HL_STOP,
               crtp.HL_GO_TO, crtp.HL_GO_TO_2)
LAND_DONE_HEIGHT_M = 0.05               # a landing that ends below this switches the motors off

# generic setpoint types whose four floats are passed on as they come; legacy types flip the yaw rate
_FOUR_FLOATS = {
    crtp.SP_VELOCITY_WORLD: ("velocity_world", False), crtp.SP_VELOCITY_WORLD_LEGACY: ("velocity_world", True),
    crtp.SP_HOVER: ("hover", False), crtp.SP_HOVER_LEGACY: ("hover", True),
    crtp.SP_ZDISTANCE: ("zdistance", False), crtp.SP_ZDISTANCE_LEGACY: ("zdistance", True),
    crtp.SP_POSITION: ("position", False),
}
_YAW_RATE_SLOT = {"velocity_world": 3, "hover": 2, "zdistance": 2}


class Commander:
    """Setpoint arbitration, watchdog and the high-level planner for one drone.

    ``ll``: the last low-level setpoint {"kind", "values", "time_us"} (None: none yet); ``hl``: the
    high-level plan {"kind", "start", "goal", "t0_us", "duration_us", "done"} (None: none);
    ``target``: the ctrltarget log group (m, m/s, CF frame)."""

    def __init__(self, vehicle, params, supervisor, stats):
        self.body = vehicle                  # vehicle.SimVehicle
        self.vehicle = vehicle.model         # its Drone2D
        self.supervisor = supervisor
        self.stats = stats
        self.ll = None
        self.ll_relaxed = False
        self.hl = None
        self._wdt_phase = 0                  # 0 ok, 1 levelled, 2 shut down
        self._applied = None                 # (ll, Drone2D command fields) a velocity_world step left behind
        self.target = {"x": 0.0, "y": 0.0, "z": 0.0, "vx": 0.0, "vy": 0.0, "vz": 0.0}
        self._en_high_level = params.get("commander", "enHighLevel")
        self._stop = params.get("stabilizer", "stop")
        self._kp_x = params.get("posCtlPid", "xKp")
        self._kp_y = params.get("posCtlPid", "yKp")
        params.watch("stabilizer", "stop", self._on_stop)
        params.watch("commander", "enHighLevel", self._on_en_high_level)

    def _on_stop(self, p):
        if p.value:
            self.vehicle.motors_off()
            self.hl = None

    def _on_en_high_level(self, p):
        if not p.value:
            self.hl = None

    def log_sources(self):
        """ctrltarget.* and stabilizer.thrust."""
        v = self.vehicle
        t = self.target
        return {"target_x_m": lambda: t["x"], "target_y_m": lambda: t["y"], "target_z_m": lambda: t["z"],
                "target_vx_mps": lambda: t["vx"], "target_vy_mps": lambda: t["vy"], "target_vz_mps": lambda: t["vz"],
                "thrust": lambda: HOVER_THRUST if (v.airborne and v.motors_on) else 0.0}

    # ---------------------------------------------------------------- low-level setpoints (ports 3, 7)
    def _set_ll(self, kind, values, now_us):
        if not is_finite(values):
            self.stats["rejected_setpoints"] += 1
            return []
        self.stats["setpoints"] += 1
        self.ll = {"kind": kind, "values": values, "time_us": now_us}
        self.ll_relaxed = False
        self._wdt_phase = 0
        self.hl = None        # a low-level setpoint takes over from the high-level commander
        return []

    def handle_rpyt(self, _channel, data, now_us, _client):
        """Port 3: roll, pitch (deg, cflib sends -pitch), yaw rate (deg/s), thrust (uint16)."""
        roll, pitch, yawrate, thrust = struct.unpack("<fffH", data[:14])
        return self._set_ll("rpyt", (roll, -pitch, yawrate, float(thrust)), now_us)

    def handle_generic(self, channel, data, now_us, _client):
        """Port 7: generic setpoints (channel 0) and notify-setpoints-stop (channel 1)."""
        if channel == crtp.GEN_CH_META:
            if data[0] == crtp.META_NOTIFY_SETPOINT_STOP:
                remain_ms = struct.unpack("<I", data[1:5])[0]
                self.stats["notify_stops"] += 1
                self.ll_relaxed = True
                if self.ll is not None:
                    setback_us = max(0, COMMANDER_WDT_SHUTDOWN_US - remain_ms * 1000)
                    self.ll["time_us"] = now_us - setback_us
                return []
            self.stats["unknown"] += 1
            return []
        if channel != crtp.GEN_CH_SETPOINT:
            self.stats["unknown"] += 1
            return []
        kind = data[0]
        body = data[1:]
        if kind == crtp.SP_STOP:
            return self._set_ll("stop", (), now_us)
        if kind in _FOUR_FLOATS:
            name, legacy = _FOUR_FLOATS[kind]
            values = struct.unpack("<ffff", body[:16])
            if legacy or name == "zdistance":
                values = list(values)
                if legacy:
                    values[_YAW_RATE_SLOT[name]] = -values[_YAW_RATE_SLOT[name]]
                if name == "zdistance":
                    # the firmware's attitude.pitch as it comes (legacy sign, positive nose up: cflib does not
                    # negate it here as it does for RPYT); kept with the RPYT setpoint's sign, positive forward
                    values[1] = -values[1]
                values = tuple(values)
            return self._set_ll(name, values, now_us)
        if kind == crtp.SP_FULL_STATE:
            vals = struct.unpack("<hhhhhhhhhIhhh", body[:28])     # mm, mm/s, mm/s^2, quaternion, mrad/s
            pos = tuple(v / 1000.0 for v in vals[0:3])
            vel = tuple(v / 1000.0 for v in vals[3:6])
            return self._set_ll("full_state", pos + vel, now_us)
        if kind == crtp.SP_MANUAL:
            roll, pitch, yawrate, thrust, _rate = struct.unpack("<fffHB", body[:15])
            return self._set_ll("rpyt", (roll, -pitch, yawrate, float(thrust)), now_us)
        self.stats["unknown"] += 1
        return []

    # ---------------------------------------------------------------- high-level commander (port 8)
    def handle_high_level(self, _channel, data, now_us, _client):
        cmd = data[0]
        if cmd == crtp.HL_SET_GROUP_MASK:
            return []
        if cmd not in HL_COMMANDS:
            self.stats["unknown"] += 1   # trajectories and spirals are not simulated
            return []
        if self._en_high_level.value == 0 or self._ll_has_priority(now_us):
            self.stats["hl_ignored"] += 1
            return []
        x, y, z, yaw = self.body.estimate_xyz_yaw()
        if cmd == crtp.HL_STOP:
            self.stats["hl_commands"] += 1
            self.hl = None
            self.ll = None
            self.vehicle.motors_off()
            return []
        if cmd in (crtp.HL_TAKEOFF, crtp.HL_LAND):
            _g, height, duration = struct.unpack("<Bff", data[1:10])
            yaw_to = yaw
        elif cmd in (crtp.HL_TAKEOFF_2, crtp.HL_LAND_2):
            _g, height, yaw_deg, use_current, duration = struct.unpack("<Bff?f", data[1:15])
            yaw_to = yaw if use_current else yaw_deg
        else:
            if cmd == crtp.HL_GO_TO:
                _g, relative, gx, gy, gz, gyaw, duration = struct.unpack("<BBfffff", data[1:23])
            else:
                _g, relative, _linear, gx, gy, gz, gyaw, duration = struct.unpack("<BBBfffff", data[1:24])
            if not is_finite((gx, gy, gz, gyaw, duration)) or duration < 0:
                self.stats["rejected_setpoints"] += 1
                return []
            if relative:
                gx, gy, gz, gyaw = x + gx, y + gy, z + gz, yaw + gyaw
            self.stats["hl_commands"] += 1
            self._start_plan("goto", (x, y, z, yaw), (gx, gy, gz, gyaw), duration, now_us)
            return []
        if not is_finite((height, duration, yaw_to)) or duration < 0:
            self.stats["rejected_setpoints"] += 1
            return []
        self.stats["hl_commands"] += 1
        kind = "takeoff" if cmd in (crtp.HL_TAKEOFF, crtp.HL_TAKEOFF_2) else "land"
        self._start_plan(kind, (x, y, z, yaw), (x, y, height, yaw_to), duration, now_us)
        return []

    def _ll_has_priority(self, now_us):
        ll = self.ll
        return (ll is not None and not self.ll_relaxed
                and now_us - ll["time_us"] <= COMMANDER_WDT_STABILIZE_US)

    def _start_plan(self, kind, start, goal, duration_s, now_us):
        self.ll = None
        self.ll_relaxed = False
        self.hl = {"kind": kind, "start": start, "goal": goal, "t0_us": now_us,
                   "duration_us": max(1, int(duration_s * 1e6)), "done": False}
        if self.supervisor.can_fly() and kind != "land":
            self.vehicle.command_height(max(goal[2], 0.0) if kind == "takeoff" else goal[2])

    # ---------------------------------------------------------------- the stabilizer loop's commander step
    def control(self, now_us):
        """Turn the setpoint in force at ``now_us`` into Drone2D commands (motors off when the drone may
        not fly or ``stabilizer.stop`` is set)."""
        v = self.vehicle
        self.supervisor.check_estop_watchdog(now_us)
        if not self.supervisor.can_fly() or self._stop.value:
            if v.motors_on:
                v.motors_off()
            return
        if self.hl is not None:
            self._follow_plan(now_us)
            return
        ll = self.ll
        if ll is None:
            return
        age_us = now_us - ll["time_us"]
        if age_us > COMMANDER_WDT_SHUTDOWN_US:
            if self._wdt_phase < 2:
                self._wdt_phase = 2
                self.stats["wdt_shutdown"] += 1
                v.motors_off()
            return
        if age_us > COMMANDER_WDT_STABILIZE_US:
            if self._wdt_phase < 1:
                self._wdt_phase = 1
                self.stats["wdt_stabilize"] += 1
                # level out: no more horizontal push, keep height as it is
                v.command_velocity(0.0, 0.0, 0.0)
                if v.v_mode == V_CLIMB:
                    v.command_climb(0.0)
            return
        kind = ll["kind"]
        vals = ll["values"]
        t = self.target
        body = self.body
        if kind == "stop":
            v.motors_off()
        elif kind == "velocity_world":
            # the same setpoint on a vehicle whose commands nothing changed since: the commands below would
            # set the same fields to the same values (setpoints are finite: _set_ll refuses the rest)
            applied = self._applied
            if applied is not None and applied[0] is ll and applied[1] == (
                    v.h_mode, v.cmd_vel_ne_mps, v.cmd_yaw_rate_radps, v.v_mode, v.cmd_climb_mps):
                return
            vx, vy, vz, yawrate = vals
            body.command_world_velocity(vx, vy, yawrate)
            v.command_climb(vz)
            t.update(vx=vx, vy=vy, vz=vz)
            self._applied = (ll, (v.h_mode, v.cmd_vel_ne_mps, v.cmd_yaw_rate_radps, v.v_mode, v.cmd_climb_mps))
        elif kind == "hover":
            bx, by, yawrate, z = vals
            psi = v.yaw_rad * -1.0          # CCW yaw of the CF frame
            vx = math.cos(psi) * bx - math.sin(psi) * by
            vy = math.sin(psi) * bx + math.cos(psi) * by
            body.command_world_velocity(vx, vy, yawrate)
            body.command_estimated_height(z)
            t.update(vx=vx, vy=vy, z=z)
        elif kind in ("position", "full_state"):
            ff = vals[3:6] if kind == "full_state" else (0.0, 0.0, 0.0)
            self._track_position(vals[0], vals[1], vals[2], ff)
        elif kind in ("rpyt", "zdistance"):
            roll_deg, pitch_deg, yawrate = vals[0], vals[1], vals[2]
            # attitude -> horizontal acceleration, body to world by yaw
            a_fwd = G_MPS2 * math.tan(math.radians(max(-MAX_TILT_DEG, min(MAX_TILT_DEG, pitch_deg))))
            a_left = -G_MPS2 * math.tan(math.radians(max(-MAX_TILT_DEG, min(MAX_TILT_DEG, roll_deg))))
            psi = -v.yaw_rad
            ax = math.cos(psi) * a_fwd - math.sin(psi) * a_left
            ay = math.sin(psi) * a_fwd + math.cos(psi) * a_left
            if kind == "zdistance":
                v.command_accel(ax, -ay, -math.radians(yawrate))
                body.command_estimated_height(vals[3])
            elif vals[3] <= 0.0:
                v.motors_off()           # thrust 0: motors off (cflib's close_link sends this)
            else:
                v.command_accel(ax, -ay, -math.radians(yawrate))
                v.command_climb((vals[3] - HOVER_THRUST) / THRUST_PER_CLIMB_MPS)

    def _track_position(self, x, y, z, ff=(0.0, 0.0, 0.0)):
        """Position setpoint (m, CF frame) with velocity feed-forward ``ff`` (m/s): P control on the
        estimate with posCtlPid.xKp/yKp (1/s), height held directly."""
        ex, ey, _ez, _yaw = self.body.estimate_xyz_yaw()
        vx = ff[0] + self._kp_x.value * (x - ex)
        vy = ff[1] + self._kp_y.value * (y - ey)
        self.body.command_world_velocity(vx, vy, 0.0)
        self.body.command_estimated_height(z)
        self.target.update(x=x, y=y, z=z, vx=vx, vy=vy, vz=ff[2])

    def _follow_plan(self, now_us):
        hl = self.hl
        s = min(1.0, max(0.0, (now_us - hl["t0_us"]) / hl["duration_us"]))
        start, goal = hl["start"], hl["goal"]
        ref = [start[k] + s * (goal[k] - start[k]) for k in range(3)]
        dur_s = hl["duration_us"] * 1e-6
        ff = [(goal[k] - start[k]) / dur_s if s < 1.0 else 0.0 for k in range(3)]
        self._track_position(ref[0], ref[1], ref[2], ff)
        if s >= 1.0 and not hl["done"]:
            hl["done"] = True
            if hl["kind"] == "land" and goal[2] <= LAND_DONE_HEIGHT_M:
                self.vehicle.motors_off()
                self.hl = None
