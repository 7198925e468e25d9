"""What a boat app's MCAP recording must hold for ``python -m harness boat-fit`` to fit the vessel model
from it (robotx III-B: the recorded motor inputs, GNSS fixes and IMU data): the one place both the boat
app (which writes them) and the harness's log reader take the topic names from (pure).

The topics are the app's recording at its boundary (``onboard.runtime.node``: ``/app/in/<entry>`` for
every sample entering an entry point, ``/app/out/<name>`` for what the app outputs), JSON messages with
the fields of the samples of ``onboard.vessel.samples`` (``as_dict()``; schema name the sample's class):

=====================  ===============  =======================================================
topic                  schema           fields
=====================  ===============  =======================================================
``/app/in/gnss``       PositionSample   time_us, pos_ne_m [north_m, east_m] (local NED), var_m2
``/app/in/heading``    HeadingSample    time_us, yaw_rad (from north towards east), var_rad2
``/app/in/yaw_rate``   YawRateSample    time_us, yaw_rate_radps (+ turning right), var_rad2ps2
``/app/out/thrust``    ThrustSample     time_us, thrust_left_n, thrust_right_n (N, + forward),
                                        held over the interval that ends at time_us: what the
                                        app's thrust map gives for its commands, the EKF's input
=====================  ===============  =======================================================

Times are the samples' own ``time_us`` (the app's clock), not the MCAP log time. The app names its
entry points ``GNSS_ENTRY``, ``HEADING_ENTRY``, ``YAW_RATE_ENTRY`` and its thrust output ``THRUST_OUTPUT``.
"""
from onboard.runtime.node import IN_PREFIX, OUT_PREFIX

GNSS_ENTRY = "gnss"
HEADING_ENTRY = "heading"
YAW_RATE_ENTRY = "yaw_rate"
THRUST_OUTPUT = "thrust"

GNSS_TOPIC = IN_PREFIX + GNSS_ENTRY
HEADING_TOPIC = IN_PREFIX + HEADING_ENTRY
YAW_RATE_TOPIC = IN_PREFIX + YAW_RATE_ENTRY
THRUST_TOPIC = OUT_PREFIX + THRUST_OUTPUT

# topic -> (schema name, fields the reader needs)
FIT_TOPICS = {
    GNSS_TOPIC: ("PositionSample", ("time_us", "pos_ne_m")),
    HEADING_TOPIC: ("HeadingSample", ("time_us", "yaw_rad")),
    YAW_RATE_TOPIC: ("YawRateSample", ("time_us", "yaw_rate_radps")),
    THRUST_TOPIC: ("ThrustSample", ("time_us", "thrust_left_n", "thrust_right_n")),
}
