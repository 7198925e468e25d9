"""``python -m boards.crazyflie member --board-config FILE``: the file's values go over the member's driver
settings, and only the values the file sets.

The board config loader fills in every default; the member used to take that whole dict as its overrides, so
a file that set one value also replaced the member's log blocks (its 24-byte state block with yaw, the power
block, its ranging slots) with the board defaults' and ignored ``--connect-timeout-s``. No drone is needed:
the driver is a stand-in that records its settings and cannot connect.
"""
import json

from boards.crazyflie import cli
from boards.crazyflie.app import member_driver_config
from boards.crazyflie.driver import CrazyflieLinkError


class _NoDrone:
    seen = []

    def __init__(self, uri, config=None, watchdog=None, name=None):
        _NoDrone.seen.append(config)

    def connect(self):
        raise CrazyflieLinkError("cannot connect to test: no drone")


def test_board_config_overrides_only_what_it_sets(tmp_path, monkeypatch, capsys):
    (tmp_path / "models" / "bearing").mkdir(parents=True)
    (tmp_path / "models" / "dqn").mkdir()
    cfg_file = tmp_path / "board.json"
    cfg_file.write_text(json.dumps({"crazyflie": {"link_timeout_s": 0.4}}))
    monkeypatch.setattr(cli, "CrazyflieDriver", _NoDrone)
    monkeypatch.setattr(cli, "load_models", lambda *a, **k: (None, None))
    _NoDrone.seen.clear()
    status = cli.main(["member", "--uri", "udp://127.0.0.1:1", "--id", "0", "--peers", "1,7",
                       "--models", str(tmp_path / "models"), "--board-config", str(cfg_file),
                       "--connect-timeout-s", "1.5"])
    assert status == cli.EXIT_LINK
    assert "no drone" in capsys.readouterr().err
    (cfg,) = _NoDrone.seen
    assert cfg["link_timeout_s"] == 0.4                                      # the file's value
    assert cfg["connect_timeout_s"] == 1.5                                   # the option's
    want = member_driver_config([1, 7])["log_blocks"]                        # the member's own blocks
    assert cfg["log_blocks"] == want, cfg["log_blocks"]
    assert "stateEstimate.yaw" in cfg["log_blocks"]["state"]["variables"]
    assert "ranging.distance7" in cfg["log_blocks"]["ranging0"]["variables"]
