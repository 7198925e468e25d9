"""onboard.core.settings.non_empty_list(..., distinct=True): a value given twice is refused (lists of lists too,
which a set could not hold); without distinct repeats stay allowed."""
from onboard.core.settings import ConfigError, checked, int_at_least, non_empty_list


def _refused(config, rules):
    try:
        checked({"n": [2]}, rules, config, "test")
    except ConfigError as exc:
        return str(exc)
    return None


def test_distinct_lists_refuse_a_repeat_and_keep_distinct_values():
    rules = {"n": non_empty_list(int_at_least(1), distinct=True)}
    assert _refused({"n": [2, 3]}, rules) is None
    msg = _refused({"n": [2, 3, 2]}, rules)
    assert msg is not None and "distinct" in msg
    assert _refused({"n": [2, 2]}, {"n": non_empty_list(int_at_least(1))}) is None


def test_distinct_lists_of_lists_compare_by_value():
    rules = {"n": non_empty_list(("a pair", lambda v: isinstance(v, list) and len(v) == 2), distinct=True)}
    assert _refused({"n": [[1, 2], [2, 1]]}, rules) is None
    assert _refused({"n": [[1, 2], [1, 2]]}, rules) is not None
