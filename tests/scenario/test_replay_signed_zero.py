"""The replay's bit-exact comparison: -0.0 against 0.0 is a difference (other bits), equal numbers are not."""
from harness.replay import compare_outputs


def _topic(value):
    return {"/app/out/wheels": [(1000, {"left": value, "right": 1.5})]}


def test_a_zero_of_the_other_sign_diverges_at_its_time():
    topics = compare_outputs(_topic(-0.0), _topic(0.0))
    assert topics["wheels"]["first_divergence_us"] == 1000 and topics["wheels"]["max_abs_diff"] == 0.0


def test_identical_zeros_and_numbers_do_not_diverge():
    for value in (0.0, -0.0, 2.25):
        assert compare_outputs(_topic(value), _topic(value))["wheels"]["first_divergence_us"] is None


def test_a_tolerance_accepts_the_sign_of_zero():
    assert compare_outputs(_topic(-0.0), _topic(0.0), tolerance=1e-12)["wheels"]["first_divergence_us"] is None
