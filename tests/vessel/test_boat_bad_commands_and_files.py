"""Bad inputs to the simulated vessels and their files:

- a NaN/inf throttle (WAM-V) or wheel command (the diff-drive base) is refused and counted, the held command
  stays (it used to become full throttle: ``min(1, nan) == 1``);
- a WAM-V step that is not a whole number of microseconds is refused (its microsecond clock drifted from
  the integrated motion);
- a course file nested deeper than the TOML reader recurses is one CourseFileError line (and exit 2 from
  the playback command), not a RecursionError traceback;
- the playback command refuses a negative seed (usage error) and an --out that is a file (one line), exit 2;
- the outboards' lag experiment refuses a control period that is not a whole multiple of the physics step (its
  ticks between two steps were never sent: at 30 Hz on 100 Hz physics 89 of 90 commands were lost and the
  lag came out 0.0 s).
"""
import math

import numpy as np
import pytest

from harness.sim import boat_course as bc
from harness.sim import boat_playback
from harness.sim.vehicles.diffdrive import DiffDriveRobot
from harness.sim.wamv import Wamv
from harness.sim.wamv_thrusters import lag_experiment
from onboard.core.settings import ConfigError

BAD = [(math.nan, 0.2), (0.2, math.nan), (math.inf, 0.2), (0.2, -math.inf)]


def _wamv_run(commands, mode):
    boat = Wamv({"mode": mode})
    for cmd in commands:
        boat.command(*cmd)
        for _ in range(20):
            boat.step()
    return boat


@pytest.mark.parametrize("mode", ["rich", "paper"])
@pytest.mark.parametrize("bad", BAD)
def test_wamv_refuses_and_counts_a_non_finite_throttle(mode, bad):
    good = _wamv_run([(0.3, 0.1)] * 3, mode)
    boat = _wamv_run([(0.3, 0.1), bad, bad], mode)
    assert boat.command_lr == [0.3, 0.1]                       # held, not full throttle
    assert boat.state() == good.state() and all(math.isfinite(v) for v in boat.state())
    assert boat.rejected_commands == 2 and good.rejected_commands == 0


@pytest.mark.parametrize("bad", BAD)
def test_diffdrive_refuses_and_counts_a_non_finite_wheel_command(bad):
    robot = DiffDriveRobot()
    robot.command(3.0, 2.0)
    robot.command(*bad)
    assert (robot.left_cmd_radps, robot.right_cmd_radps) == (3.0, 2.0)
    for _ in range(10):
        robot.step(0.01)
    assert all(math.isfinite(v) for v in (robot.north_m, robot.east_m, robot.yaw_rad, robot.left_radps))
    assert robot.rejected_commands == 1


@pytest.mark.parametrize("dt_s", [1.0 / 300.0, 0.0100004, 0.00012345])
def test_wamv_step_of_a_fraction_of_a_microsecond_is_refused(dt_s):
    with pytest.raises(ConfigError, match="dt_s"):
        Wamv({"dt_s": dt_s})


@pytest.mark.parametrize("dt_s", [0.01, 0.005, 0.0015, 1e-4, 0.1])
def test_wamv_whole_microsecond_steps_keep_the_clock_on_the_motion(dt_s):
    boat = Wamv({"dt_s": dt_s})
    n = 7
    for _ in range(n):
        boat.step()
    assert boat.time_us == n * boat.dt_us and boat.dt_us * 1e-6 == pytest.approx(dt_s, rel=0, abs=1e-12)


@pytest.mark.parametrize("nested", ["shore = " + "[" * 5000, "shore = " + "[" * 3000 + "]" * 3000,
                                    "a = " + "{b = " * 3000])
def test_a_course_nested_too_deeply_is_one_line(tmp_path, capsys, nested):
    path = tmp_path / "deep.toml"
    path.write_text(nested + "\n")
    with pytest.raises(bc.CourseFileError) as err:
        bc.load_course(path)
    assert "deep.toml" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(bc.CourseFileError):
        bc.parse_course(nested)
    assert boat_playback.main(["--out", str(tmp_path / "out"), "--course", str(path)]) == 2
    msg = capsys.readouterr().err
    assert msg.count("\n") == 1 and "deep.toml" in msg, msg
    assert not (tmp_path / "out").exists()


def test_playback_with_a_negative_seed_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        boat_playback.main(["--out", "unused", "--seed", "-1", "--seconds", "1"])
    assert exc.value.code == 2 and "--seed" in capsys.readouterr().err


def test_playback_into_a_file_not_a_folder_is_one_line_exit_2(tmp_path, capsys):
    out = tmp_path / "taken"
    out.write_text("a file")
    assert boat_playback.main(["--out", str(out), "--seconds", "1"]) == 2
    msg = capsys.readouterr().err
    assert msg.count("\n") == 1 and str(out) in msg, msg
    assert out.read_text() == "a file"


@pytest.mark.parametrize("control_hz,physics_hz", [(30.0, 100.0), (200.0, 100.0), (10.0, 300.0), (3.0, 100.0)])
def test_lag_experiment_refuses_control_ticks_between_physics_steps(control_hz, physics_hz):
    with pytest.raises(ValueError, match="whole multiple of the physics step"):
        lag_experiment(0.1, duration_s=1.0, control_hz=control_hz, physics_hz=physics_hz)


def test_lag_experiment_sends_every_tick_at_a_dividing_rate():
    out = lag_experiment(0.1, duration_s=1.0, control_hz=20.0, physics_hz=100.0)
    assert len(out["command"]) == 20 and not np.isnan(out["telemetry"]).any()
