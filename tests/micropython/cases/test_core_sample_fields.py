"""onboard.core.samples: a whole-number field (time, interval, count, id) given a fraction, text or a boolean, and
a scalar number field given None or text, is a SampleError naming the field, on CPython and MicroPython (int()
truncated 10.7 us to 10 and a 0.5 us interval to 0; float(None) raised TypeError, not a ValueError, and float('x')
a ValueError naming no field); a fault set given one name as text is refused, not split into letters."""
from onboard.core.samples import (EncoderSample, FaultSet, GnssSample, ImuSample, MissionCmd, RangeSample,
                                  SampleError, TwistCmd, VelocitySetpoint, WheelCmd, WheelSpeedSample)

ZERO3 = (0.0, 0.0, 0.0)


def _refused(make, field):
    try:
        make()
    except SampleError as exc:
        assert field in str(exc), (field, str(exc))
        return
    raise AssertionError("accepted a bad " + field)


def test_a_whole_number_field_with_a_fraction_text_or_a_boolean_is_refused():
    _refused(lambda: ImuSample(10.7, 10000, ZERO3, ZERO3), "time_us")
    _refused(lambda: ImuSample(999999.9999999, 10000, ZERO3, ZERO3), "time_us")
    _refused(lambda: ImuSample(10, 0.5, ZERO3, ZERO3), "dt_us")
    _refused(lambda: ImuSample("12", 10000, ZERO3, ZERO3), "time_us")
    _refused(lambda: ImuSample(True, 10000, ZERO3, ZERO3), "time_us")
    _refused(lambda: EncoderSample(0, 10.9, 3), "left_ticks")
    _refused(lambda: RangeSample(0, 1.5, 2.0), "peer_id")
    _refused(lambda: MissionCmd(0, [(1.0, 2.0, True)]), "direction")


def test_a_whole_number_given_as_a_float_is_taken_as_that_integer():
    s = ImuSample(10.0, 10000.0, ZERO3, ZERO3)
    assert s.time_us == 10 and s.dt_us == 10000 and isinstance(s.time_us, int) and isinstance(s.dt_us, int)
    assert EncoderSample(-5.0, -3, 2 ** 40).left_ticks == -3
    assert MissionCmd(0, [(1.0, 2.0, -1)]).waypoints_ne_m == ((1.0, 2.0, -1),)


def test_a_scalar_number_field_given_none_or_text_is_refused_naming_it():
    _refused(lambda: WheelCmd(0, None, 0.0), "left_radps")
    _refused(lambda: WheelCmd(0, 0.0, "fast"), "right_radps")
    _refused(lambda: WheelSpeedSample(0, None, 0.0), "left_radps")
    _refused(lambda: TwistCmd(0, None, 0.0), "speed_body_mps")
    _refused(lambda: TwistCmd(0, 0.0, None), "yaw_rate_radps")
    _refused(lambda: VelocitySetpoint(0, ZERO3, "x"), "yaw_rate_radps")
    _refused(lambda: GnssSample(0, None, 0.0, 0.0), "lat_deg")
    _refused(lambda: GnssSample(0, 0.0, 0.0, 0.0, h_acc_m=None), "h_acc_m")
    _refused(lambda: RangeSample(0, 1, None), "range_m")
    _refused(lambda: RangeSample(0, 1, 2.0, range_std_m="x"), "range_std_m")
    _refused(lambda: MissionCmd(0, [(1.0, "x")]), "east_m")
    _refused(lambda: MissionCmd(0, [(None, 1.0)]), "north_m")


def test_scalar_number_fields_keep_their_values():
    assert WheelCmd(0, 1, -2.5).as_dict() == {"time_us": 0, "left_radps": 1.0, "right_radps": -2.5}
    assert GnssSample(5, 47.5, 8, 400).lat_deg == 47.5
    nan_cmd = TwistCmd(0, float("nan"), 0.0)
    assert not nan_cmd.is_finite()


def test_a_fault_set_given_one_name_as_text_or_no_sequence_is_refused():
    """FaultSet(t, "link_down:left") was the set of its letters (':', '_', 'd', ...); None raised TypeError."""
    _refused(lambda: FaultSet(0, "link_down:left"), "faults")
    _refused(lambda: FaultSet(0, None), "faults")
    _refused(lambda: FaultSet(0, 7), "faults")
    assert FaultSet(0, ["b", "a", "b"]).faults == ("a", "b")
    assert FaultSet(0, ("x",)).faults == ("x",)
    assert FaultSet(0).faults == ()
