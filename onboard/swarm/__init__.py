"""Swarm agent of the pocket-drone paper (uwb-pocket-drones): actions, learned bearing estimator, DQN, agent.

Pure modules here (``actions``) run on MicroPython; the network runners use NumPy.
"""
