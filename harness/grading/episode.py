"""One grading episode (ag2u fig. 1): perception -> observation -> decision -> path following -> sand.

Per leg: the decider picks (green, red) from what it sees, the onboard
GroundRobotRuntime drives forward to green and reverses to red *on its estimated
pose* (closed loop, ag2u section III-A), the blade moves sand on the *true* pose.
The IMU (ag2u eq. 10) and aiding pose (eq. 13) noise come from the named noise
scenario. A decision is successful when the blade was more than half full during
the push (ag2u Table I criterion).
"""
import math

from harness.clock import PRIORITY_PHYSICS, PRIORITY_SENSOR, SimClock
from harness.grading.expert import DEFAULTS as EXPERT_DEFAULTS, GradingExpert
from harness.grading.observation import DEFAULTS as OBS_DEFAULTS, ObservationRenderer
from harness.grading.sand_world import DEFAULTS as WORLD_DEFAULTS, Blade, SandWorld, blade_step
from harness.sensors.imu import PlanarImu
from harness.sensors.pose import AidingPoseSensor
from harness.vehicles.diffdrive import DEFAULTS as VEHICLE_DEFAULTS, DiffDriveRobot, SimMotors
from onboard.core.units import hz_to_period_us, s_to_us
from onboard.runtime.ground_robot import GroundRobotRuntime

# ag2u section IV-B: aiding noise of the three scenarios (1 sigma) and the IMU errors used with them.
NOISE_SCENARIOS = {
    "noise_less": {"pos_sigma_m": 0.0, "att_sigma_deg": [0.0, 0.0, 0.0], "imu": False},
    "sensor_fusion": {"pos_sigma_m": 0.05, "att_sigma_deg": [1.0, 1.0, 5.0], "imu": True},
    "extreme": {"pos_sigma_m": 0.08, "att_sigma_deg": [1.0, 1.0, 10.0], "imu": True},
}

DEFAULTS = {
    "noise": "sensor_fusion",
    "heading_sigma_deg": -1.0,          # >= 0 overrides the scenario's yaw noise (fig. 5 sweep)
    "max_legs": 16,
    "leg_timeout_s": 25.0,
    "physics_hz": 200,
    "erosion_every": 10,                # physics steps between erosion passes
    "blade_edge_ahead_m": 0.2,
    "blade": {"width_m": 0.40, "capacity_m3": 0.003},
    "world": dict(WORLD_DEFAULTS),
    "vehicle": dict(VEHICLE_DEFAULTS),
    "expert": dict(EXPERT_DEFAULTS),
    "observation": dict(OBS_DEFAULTS),
    "imu": {"rate_hz": 100, "accel_bias_sigma_mps2": 0.05, "gyro_bias_sigma_dps": 0.3,
            "accel_rw_mps_per_sqrt_s": 0.01, "gyro_rw_dps_per_sqrt_s": 0.02},
    "aiding_rate_hz": 10,
    "follower": {"cruise_speed_mps": 0.25, "accept_radius_m": 0.06, "slow_radius_m": 0.25},
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
    return imu, {"rate_hz": config["aiding_rate_hz"], "pos_sigma_m": scen["pos_sigma_m"], "att_sigma_deg": att}


class ExpertDecider:
    """The expert as a decider: on the true world state (a baseline, and the teacher)."""

    def __init__(self, expert):
        self.expert = expert

    def __call__(self, episode):
        return self.expert.decide(episode.world, episode.target_level_m, episode.true_pose()[:2],
                                  episode.cfg["blade_edge_ahead_m"])


class GradingEpisode:
    def __init__(self, config, random, log=None):
        self.cfg = config
        self.log = log
        self.world = SandWorld(config["world"], random.stream("world"))
        self.target_level_m = self.world.target_level_m
        self.initial_uncleared_m3 = self.world.uncleared_volume_m3(self.target_level_m)
        self.initial_volume_m3 = self.world.volume_m3()
        self.initial_height_m = self.world.height_m.copy()
        self.blade = Blade(config["blade"]["width_m"], config["blade"]["capacity_m3"])
        self.expert = GradingExpert(self.blade.width_m, config["expert"])
        self.renderer = ObservationRenderer(config["observation"])
        start = self.expert.first_start(self.world, self.target_level_m)
        vehicle = dict(config["vehicle"])
        vehicle.update(start_ne_m=list(start), start_yaw_deg=0.0)
        self.robot = DiffDriveRobot(vehicle)
        imu_cfg, aiding_cfg = noise_config(config)
        self.clock = SimClock()
        runtime_cfg = {"imu_rate_hz": imu_cfg["rate_hz"], "aiding_rate_hz": aiding_cfg["rate_hz"],
                       "wheelbase_m": vehicle["wheelbase_m"], "wheel_radius_m": vehicle["wheel_radius_m"],
                       "max_wheel_radps": vehicle["max_wheel_radps"]}
        self.runtime = GroundRobotRuntime([start], SimMotors(self.robot), runtime_cfg,
                                          follower_config=config["follower"])
        imu = PlanarImu(self.robot, random.stream("imu"), imu_cfg)
        aiding = AidingPoseSensor(lambda: ((self.robot.north_m, self.robot.east_m, 0.0),
                                           (0.0, 0.0, self.robot.yaw_rad)), random.stream("aiding"), aiding_cfg)
        dt_s = 1.0 / config["physics_hz"]
        self._steps = 0

        def physics(t):
            r = self.robot
            r.step(dt_s)
            edge = (r.north_m + math.cos(r.yaw_rad) * config["blade_edge_ahead_m"],
                    r.east_m + math.sin(r.yaw_rad) * config["blade_edge_ahead_m"])
            blade_step(self.world, self.blade, edge, r.yaw_rad, r.speed_mps * dt_s, self.target_level_m)
            self._steps += 1
            if self._steps % config["erosion_every"] == 0:
                self.world.erode()

        def imu_tick(t):
            s = imu.sample(t)
            if s is not None:
                self.runtime.on_imu(s)

        def aiding_tick(t):
            s = aiding.sample(t)
            if s is not None:
                self.runtime.on_pose(s)

        period = hz_to_period_us(config["physics_hz"])
        self.clock.call_every(period, physics, start_us=period, priority=PRIORITY_PHYSICS)
        self.clock.call_every(hz_to_period_us(imu_cfg["rate_hz"]), imu_tick, priority=PRIORITY_SENSOR)
        self.clock.call_every(hz_to_period_us(aiding_cfg["rate_hz"]), aiding_tick, priority=PRIORITY_SENSOR)
        self.legs = []
        self.path_true = []
        self.path_est = []

    def estimated_pose(self):
        nav = self.runtime.estimator.nav_state()
        return (nav.pos_ned_m[0], nav.pos_ned_m[1], nav.euler_rad[2])

    def true_pose(self):
        return (self.robot.north_m, self.robot.east_m, self.robot.yaw_rad)

    def observation(self, pose=None):
        """The crop the policy sees: rendered at the estimated pose unless told otherwise."""
        return self.renderer.render(self.world, pose if pose is not None else self.estimated_pose())

    def _drive(self, waypoints, timeout_s):
        self.runtime.set_waypoints(waypoints)
        deadline = self.clock.now_us() + s_to_us(timeout_s)
        t = self.clock.now_us()
        peak_forward_m3 = self.blade.load_m3
        while self.runtime.mission_complete_us is None and t < deadline:
            t += 50000
            self.runtime.run(self.clock, t)
            if self.robot.speed_mps >= 0.0 and self.runtime.follower.index == 0:
                peak_forward_m3 = max(peak_forward_m3, self.blade.load_m3)
            self.path_true.append(self.true_pose()[:2])
            self.path_est.append(self.estimated_pose()[:2])
        return self.runtime.mission_complete_us is not None, peak_forward_m3

    def run(self, decider):
        # get to the first leg's start (no decision, no blade accounting)
        self._drive([self.expert.first_start(self.world, self.target_level_m)], self.cfg["leg_timeout_s"])
        finished = False
        for leg in range(self.cfg["max_legs"]):
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
        final = self.world.uncleared_volume_m3(self.target_level_m)
        n = len(self.legs)
        return {
            "finished": finished,
            "legs": n,
            "successful_decisions": sum(1 for l in self.legs if l["successful"]),
            "success_fraction": (sum(1 for l in self.legs if l["successful"]) / n) if n else 1.0,
            "mean_blade_fill_fraction": (sum(l["blade_fill_fraction"] for l in self.legs) / n) if n else 0.0,
            "episode_time_s": self.clock.now_us() * 1e-6,
            "initial_uncleared_m3": self.initial_uncleared_m3,
            "uncleared_m3": final,
            "cleared_fraction": 1.0 - final / self.initial_uncleared_m3 if self.initial_uncleared_m3 else 1.0,
            "volume_error_m3": self.world.volume_m3() + self.blade.load_m3 - self.initial_volume_m3,
            "sand_cell_updates": self.world.cell_updates,
        }
