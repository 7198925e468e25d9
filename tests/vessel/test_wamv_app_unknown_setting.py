"""A misspelled boat app setting is refused in one line naming the closest key, as the vessel components' settings
are (it used to be taken silently: {"arbitr": "damn"} ran the default plan instead of the arbiter)."""
import pytest

from boards.wamv.app import DEFAULTS, WamvApp
from onboard.core.settings import ConfigError


@pytest.mark.parametrize("bad, near", [("arbitr", "arbiter"), ("plans", "plan"), ("perception_rate", None)])
def test_a_misspelled_setting_is_one_line(bad, near):
    with pytest.raises(ConfigError) as e:
        WamvApp(None, None, {bad: 1})
    text = str(e.value)
    assert "\n" not in text and text.startswith("unknown wamv app setting %r" % bad)
    if near:
        assert text.endswith("(did you mean %r?)" % near)


def test_every_default_key_is_taken():
    app = WamvApp(None, None, dict(DEFAULTS))
    assert app.config == DEFAULTS
