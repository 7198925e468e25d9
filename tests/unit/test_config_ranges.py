"""harness.config: value-range rules, non-finite settings and the positive-int argument type."""
import argparse

import pytest

from harness.config import (NON_NEGATIVE, POSITIVE, ConfigError, check_ranges, int_at_least, merge, one_of, pair,
                            positive_int, range_problem, within)

RULES = {"rate_hz": POSITIVE, "margin_m": NON_NEGATIVE, "legs": int_at_least(1), "share": within(0.0, 1.0),
         "mode": one_of("a", "b"), "box.size_m": pair(POSITIVE), "box.span_m": pair(POSITIVE, ordered=True)}
GOOD = {"rate_hz": 10, "margin_m": 0.0, "legs": 1, "share": 1.0, "mode": "b",
        "box": {"size_m": [1.0, 2.0], "span_m": [0.1, 0.1]}}


def test_valid_settings_pass_and_missing_paths_are_skipped():
    assert range_problem(GOOD, RULES) is None
    assert range_problem({"legs": 3}, RULES) is None
    check_ranges(GOOD, RULES)


@pytest.mark.parametrize("path,value,needle", [
    ("rate_hz", 0, "rate_hz must be a number > 0, got 0"),
    ("rate_hz", float("nan"), "rate_hz must be a number > 0, got nan"),
    ("rate_hz", "fast", "rate_hz must be a number > 0"),
    ("rate_hz", True, "rate_hz must be a number > 0"),
    ("margin_m", -0.1, "margin_m must be a number >= 0"),
    ("legs", 2.0, "legs must be an integer >= 1, got 2.0"),
    ("legs", 0, "legs must be an integer >= 1, got 0"),
    ("share", 1.5, "share must be a number in [0, 1]"),
    ("mode", "c", "mode must be one of 'a', 'b', got 'c'"),
    ("box.size_m", [1.0], "box.size_m must be a list of 2 numbers (each > 0)"),
    ("box.size_m", [1.0, 0.0], "box.size_m must be a list of 2 numbers (each > 0), got [1.0, 0.0]"),
    ("box.span_m", [0.2, 0.1], "low first"),
])
def test_the_first_bad_setting_is_named_with_its_rule(path, value, needle):
    cfg = {"rate_hz": 10, "margin_m": 0.0, "legs": 1, "share": 1.0, "mode": "b",
           "box": {"size_m": [1.0, 2.0], "span_m": [0.1, 0.1]}}
    node = cfg
    *parents, leaf = path.split(".")
    for p in parents:
        node = node[p]
    node[leaf] = value
    assert needle in range_problem(cfg, RULES)
    with pytest.raises(ConfigError, match="setting config.%s" % path.replace(".", r"\.")):
        check_ranges(cfg, RULES)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), [[1.0, float("nan")]]])
def test_merge_refuses_non_finite_numbers(value):
    defaults = {"gain": 1.0, "points": [[0.0, 0.0]]}
    key = "points" if isinstance(value, list) else "gain"
    with pytest.raises(ConfigError, match="config setting %s must be finite" % key):
        merge(defaults, {key: value})


def test_positive_int_argument_type():
    assert positive_int("3") == 3
    for text in ("0", "-2", "two", "1.5"):
        with pytest.raises(argparse.ArgumentTypeError):
            positive_int(text)


def test_argument_types_from_rules():
    from harness.config import argument, non_negative_float, non_negative_int, positive_float
    assert non_negative_int("0") == 0 and non_negative_float("0") == 0.0 and positive_float("2.5") == 2.5
    gamma = argument(within(0.0, 1.0))
    assert gamma("0.95") == 0.95
    for parse, text in ((non_negative_int, "-1"), (positive_float, "0"), (positive_float, "nan"),
                        (positive_float, "inf"), (gamma, "1.5"), (gamma, "x")):
        with pytest.raises(argparse.ArgumentTypeError, match="expected .*, got '%s'" % text):
            parse(text)


@pytest.mark.parametrize("module,argv,needle", [
    ("harness.training.grading_policy.train_policy", ["--episodes", "0"], "argument --episodes: expected an integer >= 1, got '0'"),
    ("harness.training.grading_policy.train_policy", ["--label-sigma-cells", "-1"],
     "argument --label-sigma-cells: expected a number >= 0"),
    ("harness.training.swarm_policy.train_dqn", ["--gamma", "1.5"], "argument --gamma: expected a number in [0, 1], got '1.5'"),
    ("harness.training.swarm_policy.train_bearing", ["--lr", "0"], "argument --lr: expected a number > 0, got '0'"),
    ("harness.training.grading_policy.export_int8", ["--calib-episodes", "0"], "argument --calib-episodes: expected an integer >= 1"),
])
def test_training_commands_refuse_out_of_range_arguments(capsys, module, argv, needle):
    """Checked while the arguments parse, before any data is generated or a model loads."""
    import importlib
    main = importlib.import_module(module).main
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert needle in capsys.readouterr().err
