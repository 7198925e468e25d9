"""The host-side app of a ground robot whose low level is the AVR board: a recipe on one Node.

The AVR firmware (``firmware/arduino``) drives the motors and streams IMU telemetry; the host
(a Raspberry Pi) runs

- ``link`` (io, imu_rate_hz): ``AvrRobotLink.poll`` decodes what arrived and hands each
  ``ImuSample`` to the estimation's ``on_imu``;
- the ground robot's parts (:mod:`onboard.runtime.ground_robot`): ``estimation`` (``predict``,
  ``aiding``; aiding poses from any source through ``on_pose``) and ``drive`` (``control`` ->
  ``WheelCmd`` over the link; motors stopped while the failsafe is engaged).

``motors`` defaults to the link itself (its ``command``/``stop``); pass a wrapper to intercept them.
"""
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
