"""Arming and emergency stops of one simulated Crazyflie (crazyflie-firmware supervisor.c, and the ports
that feed it: platformservice.c, port 13, and crtp_localization_service.c, port 6).

A Crazyflie 2.x arms itself (``arming_required`` False); with it True the motors run only after an
arming request (platform port or supervisor port). An emergency stop (supervisor or localization port)
locks the drone: motors off, disarmed, until a crash-recovery / recover request. The emergency-stop
watchdog request (same ports) arms a timer instead: the stop comes ``EMERGENCY_STOP_WATCHDOG_US`` after
the last such request (the firmware's DEFAULT_EMERGENCY_STOP_WATCHDOG_TIMEOUT), unless it is repeated.
Disarming or locking also drops the high-level commander's plan. Port 13 also answers the protocol-version request (the
first thing cflib asks); port 6 counts external positions (finite ones; the estimator does not use
them) and accepts range streams and external poses without modelling them.
"""
import struct

from harness.sim.crazyflie import crtp
from onboard.core.linalg import is_finite

COUNTERS = ("emergency_stops", "ext_positions")
EMERGENCY_STOP_WATCHDOG_US = 1000000    # firmware DEFAULT_EMERGENCY_STOP_WATCHDOG_TIMEOUT (1000 ms)

# bit numbers of supervisor.info (as cflib's supervisor state decodes them; 5 tumbled and 7 crashed stay 0)
BIT_CAN_BE_ARMED = 0
BIT_IS_ARMED = 1
BIT_AUTO_ARM = 2
BIT_CAN_FLY = 3
BIT_IS_FLYING = 4
BIT_IS_LOCKED = 6
BIT_HL_CONTROL_ACTIVE = 8
BIT_HL_TRAJECTORY_FINISHED = 9
BIT_HL_CONTROL_DISABLED = 10


class Supervisor:
    """``armed``/``locked`` state of the drone flying the Drone2D ``model``; ``commander`` (set once the
    commander exists) is the one whose plan disarming drops and whose state the bitfield reports."""

    def __init__(self, model, params, stats, arming_required=False):
        self.model = model
        self.stats = stats
        self.arming_required = bool(arming_required)
        self.armed = not self.arming_required
        self.locked = False
        self.commander = None
        self.estop_watchdog_us = None     # time (us) the emergency-stop watchdog was last fed; None: not armed
        self._en_high_level = params.get("commander", "enHighLevel")

    def can_fly(self):
        return self.armed and not self.locked

    def arm(self, do_arm):
        self.armed = bool(do_arm) and not self.locked
        if not self.armed:
            self.model.motors_off()
            self.commander.hl = None

    def feed_estop_watchdog(self, now_us):
        """An emergency-stop watchdog request at ``now_us``: the stop comes EMERGENCY_STOP_WATCHDOG_US later
        unless another request comes first."""
        self.estop_watchdog_us = now_us

    def check_estop_watchdog(self, now_us):
        """The emergency stop of a watchdog not fed for EMERGENCY_STOP_WATCHDOG_US, at ``now_us``."""
        fed = self.estop_watchdog_us
        if fed is not None and now_us - fed >= EMERGENCY_STOP_WATCHDOG_US:
            self.estop_watchdog_us = None
            self.emergency_stop()

    def emergency_stop(self):
        self.stats["emergency_stops"] += 1
        self.locked = True
        self.armed = False
        self.commander.hl = None
        self.model.motors_off()

    def bits(self):
        """supervisor.info / the GET_STATE_BITFIELD answer."""
        v = self.model
        hl = self.commander.hl
        bits = 0
        for pos, on in ((BIT_CAN_BE_ARMED, not self.locked), (BIT_IS_ARMED, self.armed),
                        (BIT_AUTO_ARM, not self.arming_required), (BIT_CAN_FLY, self.armed and not self.locked),
                        (BIT_IS_FLYING, v.airborne and v.motors_on), (BIT_IS_LOCKED, self.locked),
                        (BIT_HL_CONTROL_ACTIVE, hl is not None),
                        (BIT_HL_TRAJECTORY_FINISHED, hl is not None and hl.get("done", False)),
                        (BIT_HL_CONTROL_DISABLED, self._en_high_level.value == 0)):
            if on:
                bits |= 1 << pos
        return bits

    def log_sources(self):
        """sys.canfly and supervisor.info."""
        return {"can_fly": lambda: 1 if (self.armed and not self.locked) else 0, "supervisor_info": self.bits}

    # ---------------------------------------------------------------- port 13 (platform)
    def handle_platform(self, channel, data, _now_us, _client):
        if channel == crtp.PLATFORM_CH_VERSION:
            if data[0] == crtp.VERSION_GET_PROTOCOL:
                return [crtp.packet(crtp.PORT_PLATFORM, crtp.PLATFORM_CH_VERSION,
                                    bytes((crtp.VERSION_GET_PROTOCOL, crtp.PROTOCOL_VERSION)))]
            self.stats["unknown"] += 1
            return []
        if channel == crtp.PLATFORM_CH_COMMAND:
            cmd = data[0]
            if cmd == crtp.PLATFORM_REQUEST_ARMING:
                self.arm(bool(data[1]))
                return []
            if cmd == crtp.PLATFORM_REQUEST_CRASH_RECOVERY:
                self.locked = False
                return []
            if cmd in (crtp.PLATFORM_SET_CONT_WAVE, crtp.PLATFORM_USER_NOTIFICATION):
                return []
        self.stats["unknown"] += 1
        return []

    # ---------------------------------------------------------------- port 9 (supervisor)
    def handle_supervisor(self, channel, data, now_us, _client):
        cmd = data[0]
        if channel == crtp.SUP_CH_INFO and cmd == crtp.SUP_GET_STATE_BITFIELD:
            return [crtp.packet(crtp.PORT_SUPERVISOR, crtp.SUP_CH_INFO,
                                bytes((0x80 | cmd,)) + struct.pack("<H", self.bits()))]
        if channel == crtp.SUP_CH_COMMAND:
            if cmd == crtp.SUP_ARM_SYSTEM:
                self.arm(bool(data[1]))
                return [crtp.packet(crtp.PORT_SUPERVISOR, crtp.SUP_CH_COMMAND,
                                    bytes((0x80 | cmd, 1, int(self.armed))))]
            if cmd == crtp.SUP_RECOVER_SYSTEM:
                self.locked = False
                return [crtp.packet(crtp.PORT_SUPERVISOR, crtp.SUP_CH_COMMAND, bytes((0x80 | cmd, 1, 1)))]
            if cmd == crtp.SUP_EMERGENCY_STOP:
                self.emergency_stop()
                return []
            if cmd == crtp.SUP_EMERGENCY_STOP_WATCHDOG:
                self.feed_estop_watchdog(now_us)
                return []
        self.stats["unknown"] += 1
        return []

    # ---------------------------------------------------------------- port 6 (localization)
    def handle_localization(self, channel, data, now_us, _client):
        if channel == crtp.LOC_CH_POSITION:
            x, y, z = struct.unpack("<fff", data[:12])
            if is_finite((x, y, z)):
                self.stats["ext_positions"] += 1
            else:
                self.stats["malformed"] += 1
            return []
        if channel == crtp.LOC_CH_GENERIC:
            if data[0] == crtp.LOC_EMERGENCY_STOP:
                self.emergency_stop()
            elif data[0] == crtp.LOC_EMERGENCY_STOP_WATCHDOG:
                self.feed_estop_watchdog(now_us)
            return []         # range streams, LPP packets, external poses: accepted, not modelled
        self.stats["unknown"] += 1
        return []
