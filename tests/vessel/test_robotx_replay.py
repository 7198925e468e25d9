"""A ``robotx-course`` run is the WAM-V app's own recipe (``perception`` + ``arbiter`` + ``mission`` settings, no
part added by the scenario; pings through the app's ``ping`` entry), recorded at the app's boundary: ``python -m
harness replay`` rebuilds the app from the log's ``/app/config`` and gets every output back bit for bit, the
mission's included; a changed mission setting is reported as a divergence."""
import copy
import json

from harness.replay import EXIT_IDENTICAL, main_replay, read_recording, replay_events
from harness.scenarios.boat import robotx_course as rc
from harness.sim.boat_course import generate_course
from onboard.runtime.mcap_log import McapLog

SEED = 1002


def _record(path):
    """The speed gate of a generated RobotX course (the first task; pings heard all the way), recorded."""
    cfg = copy.deepcopy(rc.DEFAULTS)
    cfg["course"]["tasks"] = 1
    log = McapLog(str(path))
    try:
        res = rc.run_mission((SEED, "vlp16", "wide", generate_course(SEED, "robotx"), rc.job_settings(cfg)), log)
    finally:
        log.close()
    return res


def test_a_robotx_course_run_replays_bit_exactly_and_a_changed_mission_diverges(tmp_path, capsys):
    path = tmp_path / "log.mcap"
    res = _record(path)
    assert res["done"] == [True] and res["pings"] >= 5
    code = main_replay([str(path), "--out", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert code == EXIT_IDENTICAL and "identical" in out, out
    rep = json.loads((tmp_path / "r" / "replay.json").read_text())
    assert rep["app"] == "wamv_boat" and rep["identical"]
    for name in ("arbiter", "buoys", "command", "estimate", "mission"):
        t = rep["topics"][name]
        assert t["logged"] == t["replayed"] > 0 and t["max_abs_diff"] == 0, (name, t)
    events, damage = read_recording(str(path))
    assert damage is None
    config = events[0][3]["config"]
    assert config["mission"]["tasks"][0]["kind"] == "speed_gate" and config["perception"] is not None
    inputs = {e[0] for e in events if e[0].startswith("/app/in/")}
    # the pings come in at the app's entry; nothing reaches the arbiter from outside the app
    assert "/app/in/ping" in inputs and "/app/in/lidar" in inputs
    assert not inputs & {"/app/in/destination", "/app/in/obstacles"}
    assert [e[3]["state"] for e in events if e[0] == "/app/out/mission"][-1] == "done"
    # the planner's approach way-point 3 m further out: the mission's outputs differ within the first 10 s
    header = events[0][3]
    changed_cfg = json.loads(json.dumps(config))
    changed_cfg["mission"]["planner"] = dict(changed_cfg["mission"]["planner"], approach_m=11.0)
    cut = next(i for i, e in enumerate(events) if e[0] == "/app/step" and e[2] > 10_000_000)
    result = replay_events([(events[0][0], events[0][1], events[0][2], dict(header, config=changed_cfg))]
                           + events[1:cut])
    assert not result["identical"] and result["topics"]["mission"]["first_divergence_us"] is not None
