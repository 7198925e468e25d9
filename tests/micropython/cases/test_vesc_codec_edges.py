"""VESC codec edges (onboard.comms.vesc.codec), pure: runs under CPython (pytest) and inside MicroPython."""
from onboard.comms.vesc import codec


def _encode_error(**fields):
    try:
        codec.encode_values(codec.VescValues(**fields))
    except codec.VescEncodeError:
        return True
    return False


def test_a_non_finite_value_for_an_integer_field_is_a_vesc_encode_error():
    """Integer fields (fault code, tachometer, controller id) given infinity raised OverflowError (no
    ValueError) and NaN a bare ValueError; both are a VescEncodeError naming the field, as for scaled fields."""
    for name in ("fault_code", "tachometer_ticks", "controller_id"):
        for value in (float("inf"), float("-inf"), float("nan")):
            assert _encode_error(**{name: value}), (name, value)
    assert _encode_error(v_in_v=float("nan"))
    values = codec.decode_values(codec.encode_values(codec.VescValues(fault_code=2.0, tachometer_ticks=-7,
                                                                      controller_id=300)))
    assert values.fault_code == 2 and values.tachometer_ticks == -7 and values.controller_id == 255
