"""Arduino-class (AVR) boards: the robot link protocol and the host driver (see README.md)."""
