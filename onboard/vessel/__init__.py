"""Surface-vessel parts (RobotX AAVS paper). Pure, MicroPython tier: the 3-DOF skid-steer model (``model``),
the thrust map (``thrust_map``), the sample types the boat EKF takes (``samples``), the DAMN and potential-field
arbiters (``arbiters``) and the mission planner (``mission``). CPython only (NumPy): LIDAR buoy perception
(``buoy_perception``), pinger localisation (``pinger``) and the outboards on serial (``outboards``)."""
