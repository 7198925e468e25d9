"""The systemd unit of a board service (boards/linux_service.py ``unit_text``) with paths holding characters systemd
gives a meaning to: ``%`` (a specifier, in every value) and ``$`` (a variable, in ExecStart's arguments) are written
escaped so the service gets the paths as given; quotes and backslashes in ExecStart and whitespace at the end of a
path (systemd strips it) are refused with one line."""
import os
import shutil
import subprocess

import pytest

from boards.linux_service import unit_text
from boards.rpi.service import service_unit
from onboard.core.settings import ConfigError


def _lines(text):
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


def test_percent_and_dollar_are_escaped():
    text = service_unit("/opt/py%b/bin/python3", "/srv/robot 50%h", "/etc/onboard/rpi$HOME%n.toml", "pi")
    units = _lines(text)
    assert units["WorkingDirectory"] == "/srv/robot 50%%h"
    assert units["ExecStart"] == "/opt/py%%b/bin/python3 -m boards.rpi run --config /etc/onboard/rpi$$HOME%%n.toml"


def test_plain_paths_are_unchanged():
    text = service_unit("/usr/bin/python3", "/opt/onboard", "/etc/onboard/rpi.toml", "pi")
    units = _lines(text)
    assert units["ExecStart"] == "/usr/bin/python3 -m boards.rpi run --config /etc/onboard/rpi.toml"
    assert units["WorkingDirectory"] == "/opt/onboard" and units["User"] == "pi"


@pytest.mark.parametrize("python,workdir,config,needle", [
    ('/usr/bin/py"thon', "/opt/onboard", "/etc/onboard/rpi.toml", "python must be a path without quotes"),
    ("/usr/bin/python3", "/opt/onboard", "/etc/onboard/it's.toml", "config must be a path without quotes"),
    ("/usr/bin/python3", "/opt/onboard", "/etc/onboard\\x.toml", "config must be a path without quotes or backslashes"),
    ("/usr/bin/python3", "/opt/onboard ", "/etc/onboard/rpi.toml", "workdir must not end in whitespace"),
])
def test_values_systemd_would_read_differently_are_refused(python, workdir, config, needle):
    with pytest.raises(ConfigError, match=needle):
        unit_text("x", "boards.rpi", "dialout", "stops", python, workdir, config, "pi")


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_a_config_path_with_a_percent_sign_verifies(tmp_path):
    import sys
    unit = tmp_path / "onboard-rpi.service"
    unit.write_text(service_unit(sys.executable, str(tmp_path), str(tmp_path / "rpi-100%x.toml"), "root"))
    res = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, SYSTEMD_LOG_LEVEL="err"))
    assert "specifier" not in res.stderr and res.returncode == 0, res.stdout + res.stderr
