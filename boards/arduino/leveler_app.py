"""The host-side app of the thesis's leveling robot (4.3, 7.1.1) on the AVR leveler build: a recipe on one Node.

The firmware (``make leveler``) closes the wheel speed loop, estimates its tilt from the AltIMU-10 v4
(complementary filter) and streams LEVEL_STATE at 20 Hz over a 9600-baud link. The host runs

- ``link`` (io, ``rate_hz``): ``AvrRobotLink.poll``;
- ``pitch`` (:class:`BoardPitch`): each LEVEL_STATE feeds the watched input ``level_state`` and its pitch
  (rad, Z-Y-X Euler pitch, nose up positive) becomes the behaviour's input; a LEVEL_STATE flagging
  ``FAULT_IMU`` (the board's tilt filter was not updated: its pitch is frozen) is counted (``imu_faults``) and
  not fed, so a failing IMU makes the input stale and the failsafe stops the motors;
- ``hill`` (rate group ``hill``, ``rate_hz``): the leveler apps' one hill-sensing drive
  (:class:`onboard.leveling.hill_app.HillDrive`: Cook thesis Alg. 6 -> twist -> wheel speeds, thesis 5.1.2)
  -> WHEEL_SPEED, output as ``wheel_cmd``; the behaviour's mode goes to the board as its phase (SET_PHASE,
  ``mode + 1``; 0 = no behaviour yet) when it changes, and again after each step while the link could not
  send it. While the failsafe is engaged (LEVEL_STATE stale) the motors are stopped (STOP; output as a zero
  ``wheel_cmd``);
- ``draws`` (``onboard.runtime.draws_state.DrawsState``, io, ``rate_hz``): while the node records, the state
  of ``rand`` before each behaviour step.

``rand`` is any object with ``random()`` (the behaviour's random walk; with ``get_state`` / ``set_state``, e.g.
``onboard.estimators.particle_filter_numpy.NumpyDraws``, its draws are recorded). Time is passed in
(``now_us``).

:meth:`AvrLeveler.record` records the app at its boundary (app ``avr_leveler``: each LEVEL_STATE's pitch enters
through the entry point ``level_state`` as a ``PitchSample``; outputs ``wheel_cmd`` and ``phase``):
``python -m harness replay LOG`` rebuilds it from its recorded settings.
"""
from boards.arduino import board as C
from boards.arduino import protocol as P
from onboard.core.samples import PitchSample
from onboard.core.settings import POSITIVE, RATE_HZ, checked, int_at_least
from onboard.leveling.hill_app import HillDrive
from onboard.runtime.draws_state import DrawsState
from onboard.runtime.node import Node
from onboard.runtime.polling import DriverPoll

DEFAULTS = {
    "rate_hz": 20,                                    # link poll and behaviour rate (the LEVEL_STATE rate)
    "level_state_timeout_us": 200000,                 # no LEVEL_STATE this long: failsafe, motors stopped
    "track_gauge_m": C.ROVER5["track_gauge_m"],
    "sprocket_radius_m": C.ROVER5["sprocket_radius_m"],
    "max_wheel_radps": C.ROVER5["max_wheel_radps"],
}
SETTING_RANGES = {"rate_hz": RATE_HZ, "level_state_timeout_us": int_at_least(1), "track_gauge_m": POSITIVE,
                  "sprocket_radius_m": POSITIVE, "max_wheel_radps": POSITIVE}


class BoardPitch:
    """Part: the board's pitch estimate (LEVEL_STATE) through the entry point ``level_state``; watched input
    ``level_state`` (stale after ``level_state_timeout_us``: failsafe). A LEVEL_STATE with ``FAULT_IMU`` set
    carries a frozen pitch (the firmware skipped its tilt update): counted in ``imu_faults``, never fed."""

    def __init__(self, timeout_us):
        self.timeout_us = timeout_us
        self.imu_faults = 0
        self.pitch_rad = None
        self._node = None
        self._entry = None

    def attach(self, node):
        self._node = node
        node.watch("level_state", self.timeout_us)
        self._entry = node.entry("level_state", self._on_pitch)

    def on_level_state(self, msg, now_us):
        """The driver's LEVEL_STATE handler: its pitch (mrad on the wire) enters as a PitchSample."""
        if msg.faults & P.FAULT_IMU:
            self.imu_faults += 1
            return
        self._entry(PitchSample(now_us, msg.pitch_mrad * 1e-3))

    def _on_pitch(self, sample):
        self.pitch_rad = sample.pitch_rad
        self._node.feed("level_state", sample.time_us)

    def report(self):
        return {"imu_faults": self.imu_faults}


class AvrLeveler:
    def __init__(self, link, rand, config=None, hill_config=None, log=None, start_us=0, motors=None):
        cfg = checked(DEFAULTS, SETTING_RANGES, config, "AvrLeveler")
        self.cfg = cfg
        self.link = link
        self.node = Node("avr_leveler", start_us=start_us, log=log)
        self.node.add("link", DriverPoll(link, cfg["rate_hz"]))
        self.pitch = self.node.add("pitch", BoardPitch(cfg["level_state_timeout_us"]))
        track = (cfg["track_gauge_m"], cfg["sprocket_radius_m"], cfg["max_wheel_radps"])
        self.hill = self.node.add("hill", HillDrive(hill_config, self.pitch, motors if motors is not None else link,
                                                    rand, cfg["rate_hz"], track, group="hill", output="wheel_cmd",
                                                    on_mode=self._phase))
        self.draws = self.node.add("draws", DrawsState(rand, cfg["rate_hz"]))
        self.sent_phase = None          # the last phase output (and sent, unless _phase_unsent)
        self._phase_unsent = False
        self.start_us = int(start_us)
        link.on_level_state = self.pitch.on_level_state
        self.step = self.node.step
        self.run = self.node.run

    APP = "avr_leveler"

    def recipe_config(self):
        """What rebuilds this app (before its first input): host and behaviour settings, the start time."""
        return {"config": self.cfg, "hill": self.hill.behaviour.cfg, "start_us": self.start_us}

    def record(self, sink, code_version="", time_us=0):
        """Record the app at its boundary into ``sink(topic, time_us, msg)`` (app ``avr_leveler``;
        ``onboard.runtime.node.Node.record``); call it before the first input."""
        self.node.record(sink, self.APP, self.recipe_config(), code_version, time_us)

    def _phase(self, mode, now_us):
        """The behaviour's mode to the board as its phase (SET_PHASE, ``mode + 1``) when it changes (output as
        ``phase`` then); a phase the link could not send (``set_phase`` returned None: the port was gone) is
        sent again after each later behaviour step until it goes out."""
        phase = mode + 1
        if phase != self.sent_phase:
            self.sent_phase = phase
            self._phase_unsent = True
            self.node.output("phase", now_us, {"phase": phase})
        if self._phase_unsent:
            self._phase_unsent = self.link.set_phase(phase, now_us) is None

    def report(self):
        return {"node": self.node.report(), "link": self.link.counters()}
