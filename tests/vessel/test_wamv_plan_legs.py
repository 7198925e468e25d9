"""The boat app's heading/speed plan is counted in whole microseconds: a plan whose legs round to no time (or a
malformed one) is refused when the app is built and by the service's config check, one line, instead of a
ZeroDivisionError at the first control tick with the outboards already started."""
import json

import pytest

from boards.wamv import service
from boards.wamv.app import WamvApp
from onboard.core.settings import ConfigError


@pytest.mark.parametrize("plan", [
    [[1e-7, 0.0, 1.5]],                        # rounds to 0 us
    [[4e-7, 0.0, 1.5], [4e-7, 90.0, 1.5]],
    [],
    [[8.0, 0.0]],
    [[8.0, float("nan"), 1.5]],
    [[-8.0, 0.0, 1.5], [9.0, 0.0, 1.5]],
    [[8.0, "north", 1.5]],
    7,
])
def test_the_app_refuses_a_plan_without_time(plan):
    with pytest.raises(ValueError, match="^wamv app: plan must be") as e:
        WamvApp(None, None, {"plan": plan})
    assert "\n" not in str(e.value)


def test_the_app_takes_a_plan_of_whole_microseconds():
    app = WamvApp(None, None, {"plan": [[1e-6, 0.0, 1.5], [2.5, 90.0, 1]]})
    assert app.helm.plan_us == 2500001
    assert app.helm.plan[1][2] == 1


def test_the_service_config_refuses_a_leg_under_a_microsecond(tmp_path, capsys):
    with pytest.raises(ConfigError, match="mission.plan"):
        service.merged_config({"mission": {"plan": [[1e-7, 0.0, 1.5]]}})
    assert service.merged_config({"mission": {"plan": [[1e-6, 0.0, 1.5]]}})["mission"]["plan"] == [[1e-6, 0.0, 1.5]]
    cfg = tmp_path / "bad.json"
    cfg.write_text(json.dumps({"mission": {"plan": [[1e-9, 0.0, 1.5]]}}))
    assert service.main(["run", "--config", str(cfg), "--log-file", str(tmp_path / "x.mcap")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and "mission.plan" in err, err
