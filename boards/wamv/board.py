"""The WAM-V boat computer's constants (a Linux computer on the boat: GNSS receiver on a serial port, an
IMU/heading source, two electric outboards behind VESC motor controllers on USB serial). Unit-suffixed;
the app (``boards.wamv.app``) takes them as its defaults."""

GNSS_PORT = "/dev/ttyGNSS"          # NMEA 0183 GGA at GNSS_RATE_HZ
GNSS_BAUD = 115200
GNSS_RATE_HZ = 4.0                  # robotx III-B
OUTBOARD_PORTS = {"left": "/dev/ttyVESC_L", "right": "/dev/ttyVESC_R"}
OUTBOARD_BAUD = 115200
ORIGIN_LAT_DEG = 21.3099            # local NED origin (a RobotX course); the app's north/east are about it
ORIGIN_LON_DEG = -157.8887

BASE_RATE_HZ = 100                  # estimation (EKF predict at the model's 100 Hz) and the safety check
CONTROL_RATE_HZ = 10                # heading/speed control and outboard telemetry
GNSS_POLL_HZ = 20                   # read the GNSS serial port

GNSS_TIMEOUT_US = 600000            # a 4 Hz stream missing two fixes and more is stale
IMU_TIMEOUT_US = 100000             # yaw rate at 100 Hz
HEADING_TIMEOUT_US = 300000         # compass / INS heading at 10 Hz: three missing samples
OUTBOARD_TIMEOUT_US = 150000        # telemetry at CONTROL_RATE_HZ: one missing reply and a half
GNSS_SIGMA_M = 0.5                  # per-axis fix noise the EKF assumes (HDOP x UERE, RTK-less)
ARM_M = 1.027                       # half the distance between the outboards (VRX WAM-V)
MAX_ERPM = 10000.0                  # eRPM at full throttle
HEADING_PORT = "/dev/ttyHEADING"    # GNSS compass / INS: NMEA HDT (or THS) and ROT (boards.wamv.heading_nmea)
HEADING_BAUD = 115200
HEADING_POLL_HZ = 50                # read the heading port
HEADING_SIGMA_DEG = 1.0             # heading noise the EKF assumes for HDT/THS
ROT_SIGMA_DPS = 0.5                 # rate-of-turn noise the EKF assumes for ROT
ROT_TIMEOUT_US = 300000             # the yaw rate from ROT at 10-20 Hz (the app's imu input): three missing
INPUT_RECONNECT_PERIOD_US = 500000  # a vanished GNSS / heading port is reopened this often (the VESC links' period)
