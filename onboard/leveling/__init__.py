"""Terrain-leveling behaviours (Cook thesis ch. 4 and 7.1.1): grid agents that pick up and deposit
material (probabilistic Alg. 1-2, memetic Alg. 3-4) and manipulator-free hill-sensing (Alg. 6).
Pure Python; they run on MicroPython. Each is a state machine: it takes what the agent senses and
returns what it intends; the world (or a real robot) applies it."""
