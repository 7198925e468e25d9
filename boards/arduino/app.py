"""The host-side app of a ground robot whose low level is the AVR board: a recipe on one Node.

The AVR firmware (``firmware/arduino``) drives the motors and streams IMU telemetry; the host
(a Raspberry Pi) runs

- ``link`` (io, imu_rate_hz): ``AvrRobotLink.poll`` decodes what arrived and hands each
  ``ImuSample`` to the estimation's ``on_imu``;
- the ground robot's parts (:mod:`onboard.runtime.ground_robot`): ``estimation`` (``predict``,
  ``aiding``; aiding poses from any source through ``on_pose``) and ``drive`` (``control`` ->
  ``WheelCmd`` over the link; motors stopped while the failsafe is engaged).

``motors`` defaults to the link itself (its ``command``/``stop``); pass a wrapper to intercept them.

:func:`open_signed_link` makes the driver with the link key from the app's key file (the file the firmware
was built with, ``make KEY=file``): its commands carry the signature the firmware checks, with a counter
that follows the host's wall clock (firmware/arduino/PROTOCOL.md section 10).
"""
from boards.arduino.driver import AvrRobotLink
from boards.arduino.link_key import CommandSigner, read_key_file, stamp_base_10us
from onboard.comms.signed_frame import SigningError
from onboard.core.settings import checked
from onboard.runtime import ground_robot
from onboard.runtime.ground_robot import GroundRobotRuntime
from onboard.runtime.node import Node
from onboard.runtime.polling import DriverPoll


class AvrGroundRobot:
    def __init__(self, waypoints_ne_m, link, runtime_config=None, follower_config=None, log=None, start_us=0,
                 motors=None):
        cfg = checked(ground_robot.DEFAULTS, ground_robot.SETTING_RANGES, runtime_config, "AvrGroundRobot runtime")
        self.link = link
        self.node = Node("avr_ground_robot", latching_failsafe=cfg["latching_failsafe"], start_us=start_us, log=log)
        self.node.add("link", DriverPoll(link, cfg["imu_rate_hz"]))
        self.runtime = GroundRobotRuntime(waypoints_ne_m, motors if motors is not None else link, cfg,
                                          follower_config=follower_config, node=self.node)
        link.on_imu = self.runtime.on_imu
        self.step = self.node.step
        self.run = self.node.run

    APP = "avr_ground_robot"

    def record(self, sink, code_version="", time_us=0):
        """Record the app at its boundary (:meth:`onboard.runtime.node.Node.record`): the link's samples
        enter through the estimation's entry points, so the ground robot's recipe replays it."""
        self.node.record(sink, self.APP, self.runtime.recipe_config(), code_version, time_us)

    def report(self):
        return {"runtime": self.runtime.report(), "link": self.link.counters()}


def open_signed_link(transport, key_file, key_id, unix_time_us, now_us, signing=True, **driver_kwargs):
    """The AVR driver on ``transport`` signing with the key in ``key_file`` as ``key_id``. ``unix_time_us``
    and ``now_us``: the wall clock and the runtime clock read once at start-up (the counter's stamp base).
    ``signing=False`` (only for a firmware built with SIGNING=off) sends bare commands and needs no key.
    A missing or malformed key file raises SigningError (one line, naming the file, never the key)."""
    if not signing:
        return AvrRobotLink(transport, signer=None, **driver_kwargs)
    if not key_file:
        raise SigningError("the AVR link needs its key file (or signing off, for a SIGNING=off firmware)")
    signer = CommandSigner(read_key_file(key_file), key_id, stamp_base=stamp_base_10us(unix_time_us, now_us))
    return AvrRobotLink(transport, signer=signer, **driver_kwargs)
