"""Differential-drive / skid-steer kinematics (terrain-leveling thesis, section 5.1.2).

The thesis gives v_left = (l - B*w/2)/r and v_right = (l + B*w/2)/r for a yaw
rate w that is positive counter-clockwise. In this project's NED/FRD frames a
positive yaw rate turns right (clockwise seen from above), so w = -yaw_rate_radps:
left = (l + B*yaw_rate/2)/r, right = (l - B*yaw_rate/2)/r.
"""


def wheel_speeds(speed_body_mps, yaw_rate_radps, wheelbase_m, wheel_radius_m, max_wheel_radps=None):
    """(left_radps, right_radps) for a body twist; scaled together to respect max_wheel_radps
    so the commanded curvature is kept when saturating."""
    half = 0.5 * wheelbase_m * yaw_rate_radps
    left = (speed_body_mps + half) / wheel_radius_m
    right = (speed_body_mps - half) / wheel_radius_m
    if max_wheel_radps is not None:
        biggest = max(abs(left), abs(right))
        if biggest > max_wheel_radps:
            scale = max_wheel_radps / biggest
            left *= scale
            right *= scale
    return left, right


def body_twist(left_radps, right_radps, wheelbase_m, wheel_radius_m):
    """(speed_body_mps, yaw_rate_radps) from wheel speeds; inverse of :func:`wheel_speeds`."""
    speed = 0.5 * wheel_radius_m * (left_radps + right_radps)
    yaw_rate = wheel_radius_m * (left_radps - right_radps) / wheelbase_m
    return speed, yaw_rate
