"""The WAM-V boat app (boards.wamv.app.WamvApp) on its simulated boat (harness.sim.boat_world), for the fault matrix.

Real parts: the app's GNSS io part reading NMEA GGA sentences from the receiver's serial line (a
``LoopTransport`` pair, the real parsing path of ``onboard.comms.nmea``), its heading and yaw-rate entries
called by the simulated compass / INS and gyro, and its outboards driver (``onboard.vessel.outboards.
VescOutboards``) over pyserial on the two simulated outboard VESCs' ptys (``harness.sim.wamv_thrusters``),
whose own command timeout is the VESC firmware's default (``timeout_ms`` 1000). All on the world's clock in
lockstep: physics at 100 Hz (UART service, motors, vessel), the sensors, the app's 100 Hz base tick last;
the rig advances in 10 ms steps. Seeded; GNSS dropouts and outliers off (the faults are the injected ones).

The boat follows its configured plan (its default: 1.5 m/s legs); nothing commands it over a link. Motors
"driven" = a simulated outboard VESC runs a set-point (not released, not braking, non-zero), read at the VESC.
The GNSS receiver's sentences go through :meth:`BoatRig._gnss_write` so the rig can silence or corrupt them
and shift their UTC stamps.
"""
from boards.wamv import app as wamv_app
from harness.sim.boat_world import BoatWorld, NmeaGnss
from harness.sim.rng import RunRandom
from harness.sim.vesc import MODE_BRAKE, MODE_NONE
from onboard.comms import nmea
from onboard.vessel.outboards import SIDES

SEED = 51
STEP_US = 10000                     # the rig's step: one app base tick (BASE_RATE_HZ 100) and one physics step
GNSS_PERIOD_US = 250000             # the receiver's 4 Hz (board.GNSS_RATE_HZ)
CLOCK_JUMP_US = 5000000
PLAN = [[30.0, 0.0, 1.5], [30.0, 60.0, 1.5]]      # long legs: the cells run within the first one


class _DeadComputer:
    """The boat computer while it has no power: nothing runs; the world's clock goes on to the same grid
    the app's ticks would take (the last tick time before ``until_us``)."""

    def run(self, clock, until_us):
        target = ((until_us - 1) // STEP_US) * STEP_US
        if target > clock.now_us():
            clock.sleep_until_us(target)
        return 0


class BoatRig:
    def __init__(self, tmp_path):
        self.w = BoatWorld(RunRandom(SEED), gnss={"dropout_prob": 0.0, "outlier_prob": 0.0})
        self.sim = self.w.outboards
        self.t_us = 0
        self.gnss_mode = "good"
        self.utc_offset_us = 0
        self.garbage = 0
        self.sessions = []              # (app, records, entry counts) per boot
        self.app = None
        self.sensor_mode = "good"       # "off": the compass / INS heading and the gyro's yaw rate stop
        self.off_at = {}                # side -> the step end since which that outboard is not driven
        self.side_off = None
        self.fault_us = None
        self.reasons = set()            # the failsafe's reasons seen since the fault
        self._boot(first=True)
        self.gnss_sensor = [s for s in self.w.sensors if isinstance(s, NmeaGnss)][0]
        self.gnss_sensor.entry = self._gnss_write

    # ------------------------------------------------------------ the app
    def _boot(self, first=False):
        w = self.w
        if not first:
            # opening the receiver's port: what it sent while no process had it open is not delivered
            w.gnss_app_end.read(1 << 20, 0.0)
        app = wamv_app.WamvApp(w.driver(), w.gnss_app_end, {"plan": PLAN}, start_us=w.clock.now_us())
        counts = {"heading": 0, "yaw_rate": 0}
        if first:
            w.attach_app(app, app.frame)
        self.heading_sensor = [s for s in w.sensors if getattr(s, "model", None) is w.heading_model][0]
        self.gyro_sensor = [s for s in w.sensors if getattr(s, "model", None) is w.gyro_model][0]
        self.heading_sensor.entry = self._counted(app.on_heading, counts, "heading")
        self.gyro_sensor.entry = self._counted(app.on_yaw_rate, counts, "yaw_rate")
        records = []
        w.start(app, record=lambda topic, t, msg: records.append(topic))
        self.app = app
        self.sessions.append((app, records, counts))

    def _counted(self, entry, counts, name):
        def call(sample):
            if self.sensor_mode == "good":
                counts[name] += 1
                entry(sample)
        return call

    def _crash(self):
        """The boat computer loses power: the app stops, its serial ports close, nothing is sent any more."""
        self.app.helm.outboards.close()
        self.heading_sensor.entry = lambda sample: None
        self.gyro_sensor.entry = lambda sample: None
        self.w.app = _DeadComputer()
        self.app = None

    def close(self):
        if self.app is not None:
            self.app.helm.outboards.close()
        self.w.close()

    # ------------------------------------------------------------ the GNSS receiver's line
    def _gnss_write(self, s):
        mode = self.gnss_mode
        if mode == "off":
            return
        out = self.gnss_sensor.transport
        utc_s = (s.time_us + self.utc_offset_us) * 1e-6
        lat, lon = self.gnss_sensor.frame.to_latlon(*s.pos_ne_m) if hasattr(s, "pos_ne_m") else (0.0, 0.0)
        if mode == "good":
            if not hasattr(s, "pos_ne_m"):
                out.write(nmea.gga(utc_s, 0.0, 0.0, quality=0).encode("ascii"))
                return
            out.write(nmea.gga(utc_s, lat, lon).encode("ascii"))
            return
        # garbage: in turn a sentence with a wrong checksum, bytes that are no sentence, and a sentence
        # whose latitude is NaN under a correct checksum (the parser, not the checksum, refuses it)
        self.garbage += 1
        kind = self.garbage % 3
        if kind == 0:
            line = nmea.gga(utc_s, lat, lon)
            star = line.index("*")
            bad = "%02X" % (int(line[star + 1:star + 3], 16) ^ 0x5A)
            out.write((line[:star + 1] + bad + "\r\n").encode("ascii"))
        elif kind == 1:
            out.write(b"\x00\xff$GP\x13garbage,,,*ZZ\xfe\r\n")
        else:
            body = nmea.gga(utc_s, lat, lon)[1:].split("*")[0].split(",")
            body[2] = "21nan"
            body = ",".join(body)
            out.write(("$%s*%02X\r\n" % (body, nmea.checksum(body))).encode("ascii"))

    # ------------------------------------------------------------ running
    def advance(self, until_us, watch=None):
        while self.t_us < until_us:
            self.t_us += STEP_US
            self.w.run(self.t_us, STEP_US)
            for side in SIDES:
                if not self._side_driven(side):
                    self.off_at.setdefault(side, self.t_us)
                else:
                    self.off_at.pop(side, None)
            if self.app is not None:
                self.reasons.update(self.app.failsafe.reasons)
            if watch is not None:
                watch(self.t_us)

    def _side_driven(self, side):
        s = self.sim.sims[side]
        return s.mode not in (MODE_NONE, MODE_BRAKE) and s.setpoint != 0.0

    def driven(self):
        """An outboard is driven: its simulated VESC runs a non-zero speed/duty/current set-point."""
        return any(self._side_driven(side) for side in SIDES)

    # ------------------------------------------------------------ faults
    def vesc_timeout_us(self):
        return int(self.sim.cfg["timeout_ms"]) * 1000

    def bound_us(self, fault):
        cfg = wamv_app.DEFAULTS
        # a stale input is seen at the first base tick after its timeout, the failsafe's stop (SetCurrent 0)
        # goes out in that tick and reaches the motor at the next physics step (UART service, interface update)
        extra = STEP_US + STEP_US
        what = " + 1 base tick + 1 physics step"
        if fault in ("link loss", "NaN/garbage input"):
            return cfg["gnss_timeout_us"] + extra, "gnss_timeout_us" + what
        if fault == "sensor stale":
            first = min(cfg["imu_timeout_us"], cfg["heading_timeout_us"])
            return first + extra, "imu_timeout_us (yaw rate; heading_timeout_us is longer)" + what
        if fault == "clock jump":
            return (cfg["gnss_timeout_us"] + extra + GNSS_PERIOD_US,
                    "gnss_timeout_us" + what + " + 1 GNSS period")
        if fault == "port vanishes and returns":
            return (self.vesc_timeout_us() + STEP_US,
                    "the unplugged outboard VESC's own command timeout (timeout_msec 1000, firmware default)"
                    " + 1 physics step")
        if fault == "power cycle/reboot":
            return (self.vesc_timeout_us() + STEP_US,
                    "the VESCs' own command timeout (timeout_msec 1000; nothing sent by a dead computer)"
                    " + 1 physics step")
        raise KeyError(fault)

    def inject(self, fault, t_us):
        self.fault_us = t_us
        self.off_at = {}
        self.reasons = set()
        if fault == "link loss":
            self.gnss_mode = "off"
        elif fault == "sensor stale":
            self.sensor_mode = "off"
        elif fault == "NaN/garbage input":
            self.gnss_mode = "garbage"
        elif fault == "port vanishes and returns":
            self.sim.ports["left"].unplug()
        elif fault == "power cycle/reboot":
            self._crash()
        elif fault == "clock jump":
            # the receiver's clock (the UTC of its sentences) steps 5 s ahead, then its stream is lost
            self.utc_offset_us += CLOCK_JUMP_US
            self.advance(t_us + GNSS_PERIOD_US)
            self.gnss_mode = "off"
        else:
            raise KeyError(fault)

    def clear(self, fault, t_us):
        self.side_off = dict(self.off_at)
        self.gnss_mode = "good"
        self.sensor_mode = "good"
        if fault == "port vanishes and returns":
            self.sim.ports["left"].plug()
        elif fault == "power cycle/reboot":
            self._boot()

    def log_complete(self):
        """Every boot's recording holds a /app/step and a /app/out/thrust per tick run, every GNSS fix the
        reader accepted on /app/in/gnss, every heading and yaw-rate sample the sensors delivered, and a
        /app/out/command per throttle command or stop sent to the outboards."""
        for app, records, counts in self.sessions:
            ticks = app.node.scheduler.ticks_run if app.node.scheduler is not None else 0
            drv = app.helm.outboards
            if records.count("/app/step") != ticks or records.count("/app/out/thrust") != ticks:
                return False, "ticks"
            if records.count("/app/in/gnss") != app.gnss.reader.fixes:
                return False, "gnss fixes"
            if (records.count("/app/in/heading") != counts["heading"]
                    or records.count("/app/in/yaw_rate") != counts["yaw_rate"]):
                return False, "heading / yaw rate"
            if records.count("/app/out/command") != drv.commands + drv.stops:
                return False, "commands"
        return True, "ticks, gnss, heading, yaw rate, commands"

    def extra(self, fault):
        app = self.app
        r = app.gnss.reader.report()
        out = "GNSS fixes %d, bad sentences %d, EKF bad samples %d; failsafe engagements %s (%s)" % (
            r["fixes"], r["bad"], app.estimation.bad_samples,
            "/".join(str(a.failsafe.engage_count) for a, _r, _c in self.sessions),
            ", ".join(sorted(self.reasons)) or "none")
        if fault == "port vanishes and returns" and self.side_off:
            right = self.side_off.get("right")
            if right is not None:
                out += "; the right outboard released by the app's stop after %.1f ms" % (
                    (right - self.fault_us) / 1e3)
        if fault == "power cycle/reboot":
            out += ("; boots %d (counts: the new boot's; engagements per boot); the VESCs' own timeouts "
                    "left/right %s" % (len(self.sessions), "/".join(str(self.sim.sims[s].timeouts) for s in SIDES)))
        if fault == "clock jump":
            out += "; the app stamps fixes on receipt (the NMEA UTC is not its clock)"
        return out
