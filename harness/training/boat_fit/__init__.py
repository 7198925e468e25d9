"""Fitting the vessel model (robotx eqs. 1-6, ``onboard.vessel.model``) from a log, the RobotX AAVS
paper's procedure (III-B): 5 s windows, every GNSS fix but each window's first withheld, the model
seeded from the EKF state at the window start and propagated open-loop with the recorded thrusts, the
position MSE over the withheld fixes minimised by gradient descent (plus a quasi-Newton baseline).

``fit_windows`` cuts a log into windows, ``ekf_seeds`` runs the boat EKF over a log for the seeds,
``vessel_fit`` holds the vectorised rollouts, the loss and its gradient, and the optimisers,
``procedure`` the paper's EKF -> fit alternation with a held-back test split and horizon errors,
``split_runs`` / ``second_process`` a long log's EKF passes and loss in two halves on two processes,
``vessel_rls`` the recursive least squares the paper found unstable, ``boat_log`` the CSV/MCAP readers
and ``fit_cli`` the ``python -m harness boat-fit`` command (README.md: the CSV format).

A log is a dict of equal-length numpy arrays, one row per IMU sample (uniform ``dt``):
``time_s``, ``thrust_left_n``, ``thrust_right_n`` (thrust applied from this row's time to the next),
``gnss_north_m``, ``gnss_east_m`` (NaN where there is no fix), ``yaw_rad``, ``yaw_rate_radps``
(measured at this row's time).
"""
