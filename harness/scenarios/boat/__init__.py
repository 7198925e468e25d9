"""The boat scenarios (RobotX AAVS paper): ``boat-hil-lag`` (``hil_lag``)."""
