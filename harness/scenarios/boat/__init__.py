"""The boat scenarios (RobotX AAVS paper, issue 43): ``boat-hil-lag`` (``hil_lag``)."""
