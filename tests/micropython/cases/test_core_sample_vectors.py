"""onboard.core.samples: a vector field given text ("123" was read as the vector 1, 2, 3), a table (its keys were
read as the entries) or holding a boolean or text, a number field given a boolean or text of digits, a peer
velocity of the wrong length or no sequence (taken as it was, or TypeError), and way-points given as no sequence
(TypeError) are SampleErrors naming the field, on CPython and MicroPython; an int too large for a float is +-inf
(CPython raised OverflowError, not a ValueError; MicroPython already gave inf), so the sample is built and is not
finite."""
from onboard.core.samples import (GnssSample, ImuSample, MissionCmd, NavState, PoseSample, RangeSample, SampleError,
                                  WheelCmd)

ZERO3 = (0.0, 0.0, 0.0)
INF = float("inf")


def _refused(make, field):
    try:
        make()
    except SampleError as exc:
        assert field in str(exc), (field, str(exc))
        return
    raise AssertionError("accepted a bad " + field)


def test_a_vector_given_text_a_table_or_holding_a_boolean_or_text_is_refused():
    _refused(lambda: PoseSample(0, "123", ZERO3), "pos_ned_m")
    _refused(lambda: PoseSample(0, ZERO3, ZERO3, cov_pos_m2="111"), "cov_pos_m2")
    _refused(lambda: ImuSample(0, 10, {1: 2, 3: 4, 5: 6}, ZERO3), "dvel_body_mps")
    _refused(lambda: ImuSample(0, 10, ZERO3, (True, 0.0, 0.0)), "dang_body_rad")
    _refused(lambda: NavState(0, ZERO3, ("1", 0.0, 0.0), ZERO3), "vel_ned_mps")


def test_a_number_given_a_boolean_or_text_is_refused():
    _refused(lambda: GnssSample(0, True, 8.0, 400.0), "lat_deg")
    _refused(lambda: WheelCmd(0, "1.5", 0.0), "left_radps")
    _refused(lambda: RangeSample(0, 1, False), "range_m")


def test_a_peer_velocity_of_the_wrong_length_or_no_sequence_is_refused():
    _refused(lambda: RangeSample(0, 1, 1.0, (1.0, 2.0, 3.0)), "peer_vel_mps")
    _refused(lambda: RangeSample(0, 1, 1.0, (1.0,)), "peer_vel_mps")
    _refused(lambda: RangeSample(0, 1, 1.0, None), "peer_vel_mps")
    _refused(lambda: RangeSample(0, 1, 1.0, "12"), "peer_vel_mps")
    s = RangeSample(0, 1, 1.0, [1, -2.5])
    assert s.peer_vel_mps == (1.0, -2.5) and isinstance(s.peer_vel_mps[0], float)


def test_waypoints_given_as_no_sequence_are_refused():
    _refused(lambda: MissionCmd(0, None), "waypoints_ne_m")
    _refused(lambda: MissionCmd(0, 5), "waypoints_ne_m")
    _refused(lambda: MissionCmd(0, [("1", "2")]), "north_m")
    assert MissionCmd(0, [(1, 2)]).waypoints_ne_m == ((1.0, 2.0),)
    assert MissionCmd(0, ((1.0, 2.0, -1),)).waypoints_ne_m == ((1.0, 2.0, -1),)


def test_an_int_too_large_for_a_float_is_an_infinity_not_a_crash():
    s = NavState(0, (10 ** 400, -(10 ** 400), 0), ZERO3, ZERO3)
    assert s.pos_ned_m == (INF, -INF, 0.0)
    assert not s.is_finite()
    w = WheelCmd(0, -(10 ** 400), 1)
    assert w.left_radps == -INF and w.right_radps == 1.0 and not w.is_finite()


def test_valid_vectors_keep_their_values():
    s = ImuSample(5, 10, [1, 2.5, -3], (0.0, -0.0, 1e-300))
    assert s.dvel_body_mps == (1.0, 2.5, -3.0) and s.dang_body_rad == (0.0, -0.0, 1e-300)
    assert PoseSample(0, (x for x in (1, 2, 3)), ZERO3).pos_ned_m == (1.0, 2.0, 3.0)
