"""Surface-vessel parts (pure, MicroPython tier): the RobotX AAVS 3-DOF skid-steer model
(``model``), the thrust map (``thrust_map``) and the sample types the boat EKF takes (``samples``)."""
