"""preprocess.check_recipe refuses every malformed recipe with its one-line ConfigError, as its docstring says:
an alpha that is None, text or a bool, a window that is a bool, a recipe that is no table. Before, alpha None
raised TypeError, None as the recipe TypeError, alpha "0.5" / True and window True were accepted."""
import numpy as np
import pytest

from harness.config import ConfigError
from harness.training.alexi import preprocess as pp


@pytest.mark.parametrize("bad", [{"alpha": None}, {"alpha": "0.5"}, {"alpha": True}, {"window": True},
                                 {"window": False}, {"alpha": float("nan")}])
def test_settings_of_the_wrong_type_are_a_config_error(bad):
    with pytest.raises(ConfigError, match="preprocessing (alpha|window)"):
        pp.check_recipe(dict(pp.V2_RECIPE, **bad))


@pytest.mark.parametrize("recipe", [None, ["cull"], "v2"])
def test_a_recipe_that_is_no_table_is_a_config_error(recipe):
    with pytest.raises(ConfigError, match="preprocessing recipe must be a table"):
        pp.check_recipe(recipe)


def test_numeric_settings_of_any_number_type_pass():
    for recipe in (pp.V1_RECIPE, pp.V2_RECIPE, pp.RAW_RECIPE, dict(pp.V2_RECIPE, alpha=np.float64(0.3)),
                   dict(pp.V2_RECIPE, alpha=1)):
        assert pp.check_recipe(dict(recipe)) == recipe
