"""The Pi service's motor settings (boards/rpi/service.py ``check_config``): the VESC driver routes GetValues replies
on one UART by the controller_id they carry, so two motors on one port with one controller_id would have one VESC's
telemetry taken for the other's. Such a config is one line naming the setting, exit status 2, before anything
opens; the same id on two ports is fine."""
import json

from boards.rpi.service import main

_LEFT = {"name": "left", "port": "/dev/ttyV0", "controller_id": 1, "direction": 1}
_RIGHT = {"name": "right", "port": "/dev/ttyV0", "controller_id": 1, "can_id": 2, "direction": -1}


def _run(tmp_path, motors, capsys):
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({"vesc": {"motors": motors}, "imu": {"bus": "none"}, "pose": {"udp_port": -1}}))
    code = main(["run", "--config", str(path), "--log-file", str(tmp_path / "run.mcap"), "--duration-s", "0.01"])
    return code, capsys.readouterr().err


def test_one_port_one_controller_id_is_refused(tmp_path, capsys):
    code, err = _run(tmp_path, [_LEFT, _RIGHT], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "left and right share port /dev/ttyV0 and controller_id 1" in err, err
    assert not (tmp_path / "run.mcap").exists()


def test_the_same_id_on_two_ports_is_checked_no_further(tmp_path):
    from boards.rpi.service import DEFAULT_CONFIG, merged_config
    cfg = merged_config({"vesc": {"motors": [_LEFT, dict(_RIGHT, port="/dev/ttyV1", can_id=None)]},
                         "pose": {"udp_port": -1}})
    assert cfg["vesc"]["motors"][1]["controller_id"] == 1
    assert merged_config({"pose": {"udp_port": -1}})["vesc"]["motors"] == DEFAULT_CONFIG["vesc"]["motors"]
