"""The simulated Crazyflie's log and parameter tables of contents.

Names and types are those of the crazyflie-firmware (stateEstimate, stateEstimateZ,
kalman, stabilizer, pm, ranging, supervisor, sys, radio, ctrltarget, gyro, acc log groups;
commander, stabilizer, kalman, pm, posCtlPid, velCtlPid, ring, deck, firmware
param groups), so scripts written for a real Crazyflie find what they ask for.
Each log variable names the simulated quantity it reads (a source key of the services'
``log_sources()``: vehicle, commander, supervisor, link_service);
units are the firmware's: metres, m/s, degrees, volts, Gs for stateEstimate.a* and acc.*,
deg/s for gyro.*, millimetres for stateEstimateZ.
"""
from harness.sim.crazyflie.crtp import LOG_TYPE_ID, PARAM_FLAG_RONLY, PARAM_TYPE_ID

# (group, name, C type, source key)
LOG_VARIABLES = [
    ("stateEstimate", "x", "float", "x_m"),
    ("stateEstimate", "y", "float", "y_m"),
    ("stateEstimate", "z", "float", "z_m"),
    ("stateEstimate", "vx", "float", "vx_mps"),
    ("stateEstimate", "vy", "float", "vy_mps"),
    ("stateEstimate", "vz", "float", "vz_mps"),
    ("stateEstimate", "ax", "float", "ax_g"),
    ("stateEstimate", "ay", "float", "ay_g"),
    ("stateEstimate", "az", "float", "az_g"),
    ("stateEstimate", "roll", "float", "roll_deg"),
    ("stateEstimate", "pitch", "float", "pitch_deg"),
    ("stateEstimate", "yaw", "float", "yaw_deg"),
    ("stateEstimate", "qx", "float", "qx"),
    ("stateEstimate", "qy", "float", "qy"),
    ("stateEstimate", "qz", "float", "qz"),
    ("stateEstimate", "qw", "float", "qw"),
    ("stateEstimateZ", "x", "int16_t", "x_mm"),
    ("stateEstimateZ", "y", "int16_t", "y_mm"),
    ("stateEstimateZ", "z", "int16_t", "z_mm"),
    ("stateEstimateZ", "vx", "int16_t", "vx_mmps"),
    ("stateEstimateZ", "vy", "int16_t", "vy_mmps"),
    ("stateEstimateZ", "vz", "int16_t", "vz_mmps"),
    ("stateEstimateZ", "rateYaw", "int16_t", "yaw_rate_mradps"),
    ("kalman", "stateX", "float", "x_m"),
    ("kalman", "stateY", "float", "y_m"),
    ("kalman", "stateZ", "float", "z_m"),
    ("kalman", "statePX", "float", "vx_body_mps"),
    ("kalman", "statePY", "float", "vy_body_mps"),
    ("kalman", "statePZ", "float", "vz_mps"),
    ("kalman", "varX", "float", "var_pos_m2"),
    ("kalman", "varY", "float", "var_pos_m2"),
    ("kalman", "varZ", "float", "var_pos_m2"),
    ("kalman", "varPX", "float", "var_vel_m2ps2"),
    ("kalman", "varPY", "float", "var_vel_m2ps2"),
    ("kalman", "varPZ", "float", "var_vel_m2ps2"),
    ("kalman", "q0", "float", "qw"),
    ("kalman", "q1", "float", "qx"),
    ("kalman", "q2", "float", "qy"),
    ("kalman", "q3", "float", "qz"),
    ("kalman", "inFlight", "uint8_t", "is_flying"),
    ("stabilizer", "roll", "float", "roll_deg"),
    ("stabilizer", "pitch", "float", "pitch_deg"),
    ("stabilizer", "yaw", "float", "yaw_deg"),
    ("stabilizer", "thrust", "float", "thrust"),
    ("ctrltarget", "x", "float", "target_x_m"),
    ("ctrltarget", "y", "float", "target_y_m"),
    ("ctrltarget", "z", "float", "target_z_m"),
    ("ctrltarget", "vx", "float", "target_vx_mps"),
    ("ctrltarget", "vy", "float", "target_vy_mps"),
    ("ctrltarget", "vz", "float", "target_vz_mps"),
    ("pm", "vbat", "float", "vbat_v"),
    ("pm", "vbatMV", "uint16_t", "vbat_mv"),
    ("pm", "state", "int8_t", "pm_state"),
    ("pm", "batteryLevel", "uint8_t", "battery_level"),
    ("ranging", "state", "uint16_t", "ranging_state"),
    ("ranging", "distance0", "float", "distance0"),
    ("ranging", "distance1", "float", "distance1"),
    ("ranging", "distance2", "float", "distance2"),
    ("ranging", "distance3", "float", "distance3"),
    ("ranging", "distance4", "float", "distance4"),
    ("ranging", "distance5", "float", "distance5"),
    ("ranging", "distance6", "float", "distance6"),
    ("ranging", "distance7", "float", "distance7"),
    ("supervisor", "info", "uint16_t", "supervisor_info"),
    ("sys", "canfly", "uint8_t", "can_fly"),
    ("sys", "isFlying", "uint8_t", "is_flying"),
    ("sys", "isTumbled", "uint8_t", "zero"),
    ("radio", "rssi", "uint8_t", "rssi"),
    ("radio", "isConnected", "uint8_t", "one"),
    ("gyro", "x", "float", "gyro_x_degps"),
    ("gyro", "y", "float", "gyro_y_degps"),
    ("gyro", "z", "float", "gyro_z_degps"),
    ("acc", "x", "float", "acc_x_g"),
    ("acc", "y", "float", "acc_y_g"),
    ("acc", "z", "float", "acc_z_g"),
]

# (group, name, C type, flags, default, persistent); flags: PARAM_FLAG_RONLY.
PARAMS = [
    ("commander", "enHighLevel", "uint8_t", 0, 0, False),
    ("stabilizer", "estimator", "uint8_t", 0, 2, False),
    ("stabilizer", "controller", "uint8_t", 0, 1, False),
    ("stabilizer", "stop", "uint8_t", 0, 0, False),
    ("kalman", "resetEstimation", "uint8_t", 0, 0, False),
    ("kalman", "initialX", "float", 0, 0.0, False),
    ("kalman", "initialY", "float", 0, 0.0, False),
    ("kalman", "initialZ", "float", 0, 0.0, False),
    ("kalman", "initialYaw", "float", 0, 0.0, False),
    ("kalman", "pNPos", "float", 0, 0.0, False),
    ("kalman", "pNVel", "float", 0, 0.0, False),
    ("pm", "lowVoltage", "float", 0, 3.2, False),
    ("pm", "criticalLowVoltage", "float", 0, 3.0, False),
    ("posCtlPid", "xKp", "float", 0, 2.0, False),
    ("posCtlPid", "yKp", "float", 0, 2.0, False),
    ("posCtlPid", "zKp", "float", 0, 2.0, False),
    ("posCtlPid", "thrustBase", "uint16_t", 0, 36000, False),
    ("velCtlPid", "vxKp", "float", 0, 25.0, False),
    ("velCtlPid", "vyKp", "float", 0, 25.0, False),
    ("velCtlPid", "vzKp", "float", 0, 25.0, False),
    ("ring", "effect", "uint8_t", 0, 6, True),
    ("ring", "headlightEnable", "uint8_t", 0, 0, False),
    ("supervisor", "infdmp", "uint8_t", 0, 0, False),
    ("deck", "bcLoco", "uint8_t", PARAM_FLAG_RONLY, 1, False),
    ("deck", "bcFlow2", "uint8_t", PARAM_FLAG_RONLY, 0, False),
    ("firmware", "revision0", "uint32_t", PARAM_FLAG_RONLY, 0x5151A1C0, False),
    ("firmware", "modified", "uint8_t", PARAM_FLAG_RONLY, 0, False),
    ("cpu", "flash", "uint16_t", PARAM_FLAG_RONLY, 1024, False),
    ("system", "selftestPassed", "uint8_t", PARAM_FLAG_RONLY, 1, False),
]


def _check():
    seen = set()
    for group, name, ctype, _src in LOG_VARIABLES:
        assert ctype in LOG_TYPE_ID, ctype
        assert (group, name) not in seen, (group, name)
        seen.add((group, name))
    seen = set()
    for group, name, ctype, _flags, _default, _pers in PARAMS:
        assert ctype in PARAM_TYPE_ID, ctype
        assert (group, name) not in seen, (group, name)
        seen.add((group, name))


_check()
