"""One grading episode (ag2u fig. 1): perception -> observation -> decision -> path following -> sand.

Per leg: the decider picks (green, red) from what it sees, the onboard GroundRobotRuntime drives
forward to green and reverses to red *on its estimated pose* (closed loop, ag2u section III-A), the
blade moves sand on the *true* pose. The IMU (ag2u eq. 10) and aiding pose (eq. 13) noise come from the
named noise scenario. A decision is successful when the blade was more than half full during the push
(ag2u Table I criterion: "over 50 % of the blade capacity is filled with sand, i.e., sand will be spread
in this leg"), counted while the blade's edge is in the work area: sand the blade collects inside the
spoil band (sand pushed out earlier) grades nothing, so a push through the spoil heap alone is not a
successful decision.

The dozer lives in a simulated ground world (``harness.sim.ground_world.GroundWorld``: clock, robot,
IMU, aiding pose) whose physics also moves the blade through the sand world
(``harness.sim.sand_world``). Settings of the loop's real parts:

- ``estimator``: ``"eskf"`` = strapdown INS + 15-state ES-EKF of ag2u section III-C
  (``onboard.estimators.eskf.make_eskf``, implementation ``estimator_impl`` or $ONBOARD_IMPL) behind
  ``onboard.estimators.eskf_pose.EskfPoseEstimator``, or ``"planar"`` = the 6-state planar EKF. Both
  expose ``nav_state()`` and the 3x3 covariance of (north_m, east_m, yaw_rad) through
  ``pose_covariance()`` (Sigma of ag2u eq. 1).
- ``motors``: ``"direct"`` = the runtime commands the simulated base's wheels (SimMotors), or
  ``"vesc"`` = the Pi board application (boards.rpi.app.RpiGroundRobot) drives two simulated VESCs
  over pseudo-terminals with its VESC UART driver (``harness.sim.vesc_tracks``: SetRPM, GetValues
  telemetry, keep-alive, faults -> failsafe); the VESCs' motor eRPM turn the dozer's tracks. Call
  :meth:`GradingEpisode.close` (``run`` does) to release the ptys.
- ``start``: ``"placed"`` (the default) = the dozer is placed at the first leg's start facing north
  (the push direction) and stands still (``GroundRobotRuntime.hold``) for ``start_settle_s`` while the
  filter settles; then the first decision. ``"drive"`` = the runtime first drives to that start on its
  estimate: with a held aiding error larger than the follower's acceptance radius it turns towards its
  own position error on the way, so the first decision may face off the push direction.

Recording: ``GradingEpisode(..., record=sink)`` records the onboard app at its boundary
(:meth:`onboard.runtime.node.Node.record`: the ground robot, or the Pi app with motors = vesc): its
IMU and aiding samples, the leg commands (``set_waypoints`` / ``hold`` enter through its ``mission``
entry point), the VESC driver's fault sets, ticks and commands; ``python -m harness replay`` re-runs it
(``--impl`` with another ESKF implementation). With ``log``, the episode logs the samples (``/imu``,
``/aiding/pose``), the app's estimates and commands (``/estimate``, ``/cmd/wheels``) and the truth
(``/truth``, with the blade's load) there too.
"""
import math

from boards.rpi import board as RPI
from boards.rpi.app import RpiGroundRobot
from boards.rpi.vesc_motors import DRIVE_SETTING_RANGES
from harness.config import ANY_NUMBER, NON_NEGATIVE, POSITIVE, RATE_HZ, int_at_least, mounted, one_of, range_problem
from harness.metrics import rms_of_squares
from harness.scenarios.grading.expert import DEFAULTS as EXPERT_DEFAULTS, SETTING_RANGES as EXPERT_RANGES, GradingExpert
from harness.scenarios.grading.observation import DEFAULTS as OBS_DEFAULTS, SETTING_RANGES as OBS_RANGES
from harness.scenarios.grading.observation import ObservationRenderer
from harness.sim.ground_world import GroundWorld
from harness.sim.sand_world import DEFAULTS as WORLD_DEFAULTS, SETTING_RANGES as WORLD_RANGES, Blade, SandWorld
from harness.sim.sand_world import blade_step
from harness.sim.sensors.imu import SETTING_RANGES as IMU_RANGES
from harness.sim.sensors.pose import ERROR_MODELS as AIDING_ERROR_MODELS
from harness.sim.vehicles.diffdrive import DEFAULTS as VEHICLE_DEFAULTS, SETTING_RANGES as VEHICLE_RANGES, SimMotors
from harness.sim.vesc import SETTING_RANGES as SIM_VESC_RANGES
from harness.sim.vesc_tracks import TOPOLOGIES, TRACK_VESC, SimVescTracks
from onboard.control.waypoint import SETTING_RANGES as FOLLOWER_RANGES
from onboard.core.angles import wrap_pi
from onboard.core.units import s_to_us
from onboard.estimators.eskf_pose import (MIN_ACCEL_BIAS_SIGMA_MPS2, MIN_ACCEL_NOISE_MPS_PER_SQRT_S,
                                          MIN_ANGLE_SIGMA_RAD, MIN_GYRO_BIAS_SIGMA_RADPS,
                                          MIN_GYRO_NOISE_RAD_PER_SQRT_S, MIN_POS_SIGMA_M, MIN_VEL_SIGMA_MPS,
                                          EskfPoseEstimator)
from onboard.impl import IMPLEMENTATIONS
from onboard.runtime.ground_robot import DEFAULTS as RUNTIME_DEFAULTS, GroundRobotRuntime, runtime_config
from onboard.runtime.scheduler import GROUP_RATES

# ag2u section IV-B: aiding error of the three scenarios, per axis (eq. 13's Delta p_err / Delta Psi_err;
# the 1-sigma with aiding_error=white), and whether the IMU errors of eq. 10 apply.
NOISE_SCENARIOS = {
    "noise_less": {"pos_sigma_m": 0.0, "att_sigma_deg": [0.0, 0.0, 0.0], "imu": False},
    "sensor_fusion": {"pos_sigma_m": 0.05, "att_sigma_deg": [1.0, 1.0, 5.0], "imu": True},
    "extreme": {"pos_sigma_m": 0.08, "att_sigma_deg": [1.0, 1.0, 10.0], "imu": True},
}

ESTIMATORS = ("planar", "eskf")
STARTS = ("placed", "drive")
LOOP_STEP_US = 50000            # the episode advances the runtime and records the pose errors in these steps
MOTORS = ("direct", "vesc")

DEFAULTS = {
    "noise": "sensor_fusion",           # noise_less | sensor_fusion | extreme (ag2u IV-B: NOISE_SCENARIOS)
    "estimator": "eskf",                # eskf (INS + 15-state ES-EKF, ag2u III-C) | planar (6-state EKF)
    "estimator_impl": "",               # eskf implementation: pure | cython | numpy; "" = $ONBOARD_IMPL
    "motors": "direct",                 # direct (simulated base) | vesc (Pi app + simulated VESCs over ptys)
    "vesc": {"topology": "two_uarts",   # or can_forward (right VESC behind the left one on CAN)
             "uart_service_hz": 200,    # how often the simulated VESCs read their UART (per s)
             "telemetry_rate_hz": RPI.TELEMETRY_RATE_HZ,            # GetValues polls per s
             "stop_brake_current_a": RPI.STOP_BRAKE_CURRENT_A,      # brake current when stopping (A)
             "gear_ratio": RPI.GEAR_RATIO, "pole_pairs": RPI.MOTOR_POLE_PAIRS,     # motor eRPM per wheel rad/s
             "sim": dict(TRACK_VESC)},  # the vesc-waypoints scenario's motor model
    "heading_sigma_deg": -1.0,          # >= 0: the aiding yaw error (deg) instead of the scenario's (ag2u fig. 5)
    "start": "placed",                  # placed: stands at the first start, settles | drive: drives there first
    "start_settle_s": 3.0,              # placed: standing still this long (simulated s) before deciding
    "max_legs": 16,                     # decisions at most; the episode ends earlier when the expert sees no work
    "leg_timeout_s": 25.0,              # simulated s a leg (forward to green, back to red) may take
    "physics_hz": 200,                  # robot and sand physics steps per simulated second
    "erosion_every": 10,                # physics steps between erosion passes
    "blade_edge_ahead_m": 0.2,          # blade edge ahead of the dozer's reference point (m)
    "blade": {"width_m": 0.40, "capacity_m3": 0.003},      # a blade is full at capacity_m3 (ag2u Table I: > half)
    "world": dict(WORLD_DEFAULTS),
    "vehicle": dict(VEHICLE_DEFAULTS),
    "expert": dict(EXPERT_DEFAULTS),
    "observation": dict(OBS_DEFAULTS),
    "imu": {"rate_hz": 100, "accel_bias_sigma_mps2": 0.05, "gyro_bias_sigma_dps": 0.3,   # ag2u eq. 10 (zeroed
            "accel_rw_mps_per_sqrt_s": 0.01, "gyro_rw_dps_per_sqrt_s": 0.02},             # by noise_less)
    "aiding_rate_hz": 10,               # aiding poses per s (ag2u eq. 13; errors from the noise scenario)
    "aiding_error": "constant",         # constant: eq. 13's error vector held for the episode (as the paper
                                        # writes it, like eq. 11's IC errors) | white: fresh N(0, sigma) per
                                        # sample (harness.sim.sensors.pose)
    "follower": {"cruise_speed_mps": 0.25, "accept_radius_m": 0.06, "slow_radius_m": 0.25},  # onboard.control.waypoint
}


def noise_config(config):
    """(imu config, aiding config) for the episode's noise scenario."""
    if config["noise"] not in NOISE_SCENARIOS:
        raise ValueError("unknown noise scenario %r (known: %s)" % (config["noise"], ", ".join(NOISE_SCENARIOS)))
    scen = NOISE_SCENARIOS[config["noise"]]
    imu = dict(config["imu"])
    if not scen["imu"]:
        imu.update(accel_bias_sigma_mps2=0.0, gyro_bias_sigma_dps=0.0, accel_rw_mps_per_sqrt_s=0.0,
                   gyro_rw_dps_per_sqrt_s=0.0)
    att = list(scen["att_sigma_deg"])
    if config["heading_sigma_deg"] >= 0.0:
        att[2] = config["heading_sigma_deg"]
    return imu, {"rate_hz": config["aiding_rate_hz"], "pos_sigma_m": scen["pos_sigma_m"], "att_sigma_deg": att,
                 "error_model": config["aiding_error"]}


def eskf_config(imu_cfg, aiding_cfg):
    """ES-EKF settings matching the episode's simulated IMU (ag2u eq. 10) and aiding pose (eq. 13).

    The filter starts from the first aiding pose, so its initial position/attitude sigma
    are the aiding sensor's; velocity starts at rest (the dozer waits at its start).
    """
    rad = math.radians
    pos_sigma = max(aiding_cfg["pos_sigma_m"], MIN_POS_SIGMA_M)
    att_sigma = [max(rad(a), MIN_ANGLE_SIGMA_RAD) for a in aiding_cfg["att_sigma_deg"]]
    return {
        "accel_noise_mps_per_sqrt_s": max(imu_cfg["accel_rw_mps_per_sqrt_s"], MIN_ACCEL_NOISE_MPS_PER_SQRT_S),
        "gyro_noise_rad_per_sqrt_s": max(rad(imu_cfg["gyro_rw_dps_per_sqrt_s"]), MIN_GYRO_NOISE_RAD_PER_SQRT_S),
        "init_pos_sigma_m": [pos_sigma] * 3,
        "init_att_sigma_rad": att_sigma,
        "init_vel_sigma_mps": [MIN_VEL_SIGMA_MPS] * 3,
        "init_accel_bias_sigma_mps2": [max(imu_cfg["accel_bias_sigma_mps2"], MIN_ACCEL_BIAS_SIGMA_MPS2)] * 3,
        "init_gyro_bias_sigma_radps": [max(rad(imu_cfg["gyro_bias_sigma_dps"]), MIN_GYRO_BIAS_SIGMA_RADPS)] * 3,
        "pose_pos_sigma_m": [pos_sigma] * 3,
        "pose_att_sigma_rad": att_sigma,
    }


def make_estimator(config, imu_cfg, aiding_cfg):
    """The runtime's estimator for the episode's ``estimator`` setting (None = the runtime's planar EKF)."""
    kind = config["estimator"]
    if kind == "planar":
        return None
    if kind == "eskf":
        consider = None
        if aiding_cfg["error_model"] == "constant":
            consider = [aiding_cfg["pos_sigma_m"]] * 3 + [math.radians(a) for a in aiding_cfg["att_sigma_deg"]]
        return EskfPoseEstimator(eskf_config(imu_cfg, aiding_cfg), config["estimator_impl"], consider_sigma=consider)
    raise ValueError("unknown estimator %r (known: %s)" % (kind, ", ".join(ESTIMATORS)))


class ExpertDecider:
    """The expert as a decider: on the true world state (a baseline, and the teacher)."""

    def __init__(self, expert):
        self.expert = expert

    def __call__(self, episode):
        return self.expert.decide(episode.world, episode.target_level_m, episode.true_pose()[:2],
                                  episode.cfg["blade_edge_ahead_m"])


# value ranges of the episode settings (harness.config rules; the blocks' rules from their components);
# heading_sigma_deg (< 0: off) takes any finite number
SETTING_RANGES = {
    **{"estimator": one_of(*ESTIMATORS), "motors": one_of(*MOTORS), "start": one_of(*STARTS),
       "start_settle_s": NON_NEGATIVE, "noise": one_of(*NOISE_SCENARIOS),
       "aiding_error": one_of(*AIDING_ERROR_MODELS), "vesc.topology": one_of(*TOPOLOGIES),
       "estimator_impl": one_of("", *IMPLEMENTATIONS),
       "max_legs": int_at_least(1), "leg_timeout_s": POSITIVE, "physics_hz": RATE_HZ,
       "erosion_every": int_at_least(1), "blade_edge_ahead_m": NON_NEGATIVE, "aiding_rate_hz": RATE_HZ,
       "blade.width_m": POSITIVE, "blade.capacity_m3": POSITIVE, "heading_sigma_deg": ANY_NUMBER,
       "vesc.uart_service_hz": RATE_HZ},
    **mounted(DEFAULTS, ("world", WORLD_RANGES), ("expert", EXPERT_RANGES), ("observation", OBS_RANGES),
              ("vehicle", VEHICLE_RANGES), ("imu", IMU_RANGES), ("follower", FOLLOWER_RANGES),
              ("vesc", DRIVE_SETTING_RANGES), ("vesc.sim", SIM_VESC_RANGES))}


# the runtime's scheduler runs the IMU, aiding and control groups (control at the runtime's default rate) and,
# with motors = vesc, the Pi app's VESC telemetry group: checked here, not when the episode builds the runtime
_CONTROL_RATE_HZ = RUNTIME_DEFAULTS["control_rate_hz"]
SETTING_RANGES[("imu.rate_hz", "aiding_rate_hz", "motors", "vesc.telemetry_rate_hz")] = (
    "rates one scheduler can run with the runtime's control rate (%d Hz) and, with motors vesc, the VESC "
    "telemetry rate: each divides the fastest, whose period is a whole number of microseconds" % _CONTROL_RATE_HZ,
    lambda imu_hz, aiding_hz, motors, telemetry_hz: GROUP_RATES[1](
        imu_hz, aiding_hz, _CONTROL_RATE_HZ, *((telemetry_hz,) if motors == "vesc" else ())))


def invalid_setting(config):
    """The first episode setting outside its choices or range, as "<path> must be ..., got <value>"; None
    when all are valid (the sweep reports it as a config error before anything runs, GradingEpisode raises
    it; the grading scenario checks the same as its SETTING_RANGES, then :func:`related_setting_problem`)."""
    return range_problem(config, SETTING_RANGES) or related_setting_problem(config)


def related_setting_problem(config):
    """The first setting that contradicts another one (the world's pile counts and sizes), as in
    :func:`invalid_setting`; None when they agree. Expects the settings to be in their ranges."""
    world = config["world"]
    if world["piles_max"] < world["piles_min"]:
        return "world.piles_max must be >= world.piles_min (%d), got %d" % (world["piles_min"], world["piles_max"])
    if world["cell_m"] * 4 > min(world["size_m"]):
        return "world.cell_m must be at most a quarter of the world's size %r, got %r" % (world["size_m"], world["cell_m"])
    if world["spoil_band_m"] >= world["size_m"][0]:
        return "world.spoil_band_m must be less than the world's north size %r, got %r" % (world["size_m"][0],
                                                                                           world["spoil_band_m"])
    return None


class GradingEpisode:
    """One episode: the sand world (``world``), the dozer in a simulated ground world (``sim``; its
    ``robot`` and ``clock``), the onboard app (``runtime``; ``app``: the Pi app with motors = vesc, whose
    simulated VESCs are ``vesc``), the blade, the expert and the observation renderer.

    random: the run's RunRandom (streams "world", "imu", "aiding"). log: ``log(topic, time_us, msg)``
    for the samples, commands and truth, or None. record: optional ``sink(topic, time_us, msg)`` the
    onboard app records into from the start (e.g. the run's MCAP log); code_version: written with the
    recording's settings. progress: ``update_to(sim_s)`` as simulated time advances, or None.
    """

    def __init__(self, config, random, log=None, record=None, code_version="", progress=None):
        imu_cfg, aiding_cfg = noise_config(config)        # "unknown noise scenario" first
        problem = invalid_setting(config)
        if problem:
            raise ValueError(problem)
        self.cfg = config
        self.log = log
        self.world = SandWorld(config["world"], random.stream("world"))
        self.target_level_m = self.world.target_level_m
        self.initial_uncleared_m3 = self.world.uncleared_volume_m3(self.target_level_m)
        self.initial_volume_m3 = self.world.volume_m3()
        self.initial_height_m = self.world.height_m.copy()
        self.blade = Blade(config["blade"]["width_m"], config["blade"]["capacity_m3"])
        self.expert = GradingExpert(self.blade.width_m, config["expert"], self.blade.capacity_m3)
        self.renderer = ObservationRenderer(config["observation"])
        start = self.expert.first_start(self.world, self.target_level_m, config["blade_edge_ahead_m"])
        vehicle = dict(config["vehicle"], start_ne_m=list(start), start_yaw_deg=0.0)
        self.sim = GroundWorld(vehicle, random, log)
        self.sim.progress = progress
        self.robot, self.clock = self.sim.robot, self.sim.clock
        self.vesc = self.app = None
        self.closed = False
        try:                             # the VESC ptys are open from here: released if the set-up fails
            self.runtime = self._onboard_app(config, vehicle, imu_cfg, aiding_cfg, [start])
            self.sim.start(self.app or self.runtime, record=record, code_version=code_version)
            if self.vesc is not None:
                self.vesc.attach(self.sim, config["vesc"]["uart_service_hz"])
            self._steps = 0
            self.sim.drive(config["physics_hz"], tracks=self.vesc, after_step=self._move_sand)
            self.sim.add_imu(imu_cfg, self.runtime.on_imu)
            self.sim.add_aiding(aiding_cfg, self.runtime.on_pose)
        except BaseException:
            self.close()
            raise
        self.legs = []
        self.path_true = []
        self.path_est = []
        self._pos_err2_m2 = []           # squared estimation errors every LOOP_STEP_US
        self._yaw_err2_rad2 = []

    def _onboard_app(self, config, vehicle, imu_cfg, aiding_cfg, waypoints):
        """The dozer's app for the ``motors`` setting; its ground-robot runtime."""
        runtime_cfg = runtime_config(None, imu_cfg["rate_hz"], aiding_cfg["rate_hz"], vehicle)
        estimator = make_estimator(config, imu_cfg, aiding_cfg)
        if config["motors"] != "vesc":
            return GroundRobotRuntime(waypoints, SimMotors(self.robot), runtime_cfg, follower_config=config["follower"],
                                      estimator=estimator, log=self.log)
        vc = config["vesc"]
        self.vesc = SimVescTracks(vc["sim"], vc["topology"], RPI.erpm_per_radps(vc["gear_ratio"], vc["pole_pairs"]),
                                  vehicle["max_wheel_radps"], vc["stop_brake_current_a"], log=self.log,
                                  tmp_prefix="grading-vesc-")
        self.app = RpiGroundRobot(waypoints, self.vesc.driver, runtime_config=runtime_cfg,
                                  follower_config=config["follower"], telemetry_rate_hz=vc["telemetry_rate_hz"],
                                  estimator=estimator, log=self.log)
        self.app.start(0)
        return self.app.runtime

    def _move_sand(self, dt_s, now_us):
        """After each physics step: the blade moves sand along the dozer's true path; erosion every
        ``erosion_every`` steps."""
        r = self.robot
        blade_step(self.world, self.blade, self.blade_edge_ne_m(), r.yaw_rad, r.speed_mps * dt_s, self.target_level_m)
        self._steps += 1
        if self._steps % self.cfg["erosion_every"] == 0:
            self.world.erode()

    def close(self):
        """Release the motors and the VESC ptys (motors = vesc); idempotent."""
        if self.closed:
            return
        self.closed = True
        if self.vesc is not None:
            try:
                if self.app is not None:
                    self.app.shutdown(self.clock.now_us(), reason="episode end")
            finally:
                self.vesc.close()

    def estimated_pose(self):
        nav = self.runtime.estimator.nav_state()
        return (nav.pos_ned_m[0], nav.pos_ned_m[1], nav.euler_rad[2])

    def true_pose(self):
        return (self.robot.north_m, self.robot.east_m, self.robot.yaw_rad)

    def observation(self, pose=None):
        """The crop the policy sees: rendered at the estimated pose unless told otherwise (the dozer, when
        the observation shows it, at its true pose)."""
        return self.renderer.render(self.world, pose if pose is not None else self.estimated_pose(), self.true_pose())

    def blade_edge_ne_m(self):
        """(north_m, east_m) of the blade edge's centre at the dozer's true pose."""
        r = self.robot
        ahead_m = self.cfg["blade_edge_ahead_m"]
        return r.north_m + math.cos(r.yaw_rad) * ahead_m, r.east_m + math.sin(r.yaw_rad) * ahead_m

    def _blade_edge_in_work_area(self):
        """True while the blade's edge (true pose) is south of the spoil band, i.e. in the graded area."""
        return self.blade_edge_ne_m()[0] < self.world.work_north_max_m

    def _drive(self, waypoints, timeout_s):
        """Drive to ``waypoints`` on the estimate for at most ``timeout_s`` (simulated s); (reached, the
        blade's peak load (m^3) while pushing forward to the first way-point with its edge in the work area)."""
        self.runtime.set_waypoints(waypoints, time_us=self.clock.now_us())
        peak_forward_m3 = [self.blade.load_m3]

        def each_step(t_us):
            self._record(t_us)
            if (self.robot.speed_mps >= 0.0 and self.runtime.follower.index == 0
                    and self._blade_edge_in_work_area()):
                peak_forward_m3[0] = max(peak_forward_m3[0], self.blade.load_m3)
        reached = self.sim.run(self.clock.now_us() + s_to_us(timeout_s), LOOP_STEP_US,
                               lambda: self.runtime.mission_complete_us is not None, each_step)
        return reached, peak_forward_m3[0]

    def _advance(self, until_us):
        """Run the loop to ``until_us`` (whatever the runtime does: e.g. holding), in LOOP_STEP_US steps."""
        self.sim.run(until_us, LOOP_STEP_US, each_step=self._record)

    def _record(self, t_us):
        """After each loop step: the true and estimated paths, the squared estimation errors, ``/truth``."""
        true, est = self.true_pose(), self.estimated_pose()
        self.path_true.append(true[:2])
        self.path_est.append(est[:2])
        self._pos_err2_m2.append((true[0] - est[0]) ** 2 + (true[1] - est[1]) ** 2)
        self._yaw_err2_rad2.append(wrap_pi(true[2] - est[2]) ** 2)
        if self.log is not None:
            self.sim.log_truth(t_us, blade_load_m3=self.blade.load_m3)

    def run(self, decider):
        """Drive the episode with ``decider(episode) -> (green, red) | None``; metrics dict.

        The episode is closed afterwards (VESC ptys released), also on error.
        """
        try:
            return self._run(decider)
        finally:
            self.close()

    def _run(self, decider):
        if self.cfg["start"] == "placed":
            # placed at the first leg's start: stand still while the filter settles (no blade accounting)
            self.runtime.hold(time_us=self.clock.now_us())
            self._advance(self.clock.now_us() + s_to_us(self.cfg["start_settle_s"]))
        else:
            # get to the first leg's start on the estimate (no decision, no blade accounting)
            start = self.expert.first_start(self.world, self.target_level_m, self.cfg["blade_edge_ahead_m"])
            self._drive([start], self.cfg["leg_timeout_s"])
        finished = False
        for _leg in range(self.cfg["max_legs"]):
            decision = decider(self)
            if decision is None:
                finished = True
                break
            green, red = decision
            before = self.world.uncleared_volume_m3(self.target_level_m)
            reached, peak_m3 = self._drive([(green[0], green[1], 1), (red[0], red[1], -1)],
                                           self.cfg["leg_timeout_s"])
            after = self.world.uncleared_volume_m3(self.target_level_m)
            fill = peak_m3 / self.blade.capacity_m3
            self.legs.append({"green_ne_m": list(green), "red_ne_m": list(red), "reached": reached,
                              "blade_fill_fraction": fill, "successful": fill > 0.5,
                              "uncleared_before_m3": before, "uncleared_after_m3": after,
                              "end_time_s": self.clock.now_us() * 1e-6})
        return self._metrics(finished)

    def _metrics(self, finished):
        final = self.world.uncleared_volume_m3(self.target_level_m)
        n = len(self.legs)
        successful = sum(1 for leg in self.legs if leg["successful"])
        out = {
            "finished": finished,
            "legs": n,
            "successful_decisions": successful,
            "success_fraction": (successful / n) if n else 1.0,
            "mean_blade_fill_fraction": (sum(leg["blade_fill_fraction"] for leg in self.legs) / n) if n else 0.0,
            "episode_time_s": self.clock.now_us() * 1e-6,
            "initial_uncleared_m3": self.initial_uncleared_m3,
            "uncleared_m3": final,
            "cleared_fraction": 1.0 - final / self.initial_uncleared_m3 if self.initial_uncleared_m3 else 1.0,
            "volume_error_m3": self.world.volume_m3() + self.blade.load_m3 - self.initial_volume_m3,
            "sand_cell_updates": self.world.cell_updates,
            "estimator": self.cfg["estimator"],
            "position_error_rms_m": rms_of_squares(self._pos_err2_m2),
            "yaw_error_rms_deg": math.degrees(rms_of_squares(self._yaw_err2_rad2)),
            "motors": self.cfg["motors"],
            "runtime": self.runtime.report(),
        }
        if self.vesc is not None:
            out["vesc"] = self.vesc.report()
            out["vesc"]["fault_events"] = [list(e) for e in self.app.fault_events]
        return out
