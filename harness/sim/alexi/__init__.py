"""Alexi: the learned 2-D surrogate of the terrain-leveling thesis (Cook 2017, ch. 6).

Modules: :mod:`nets` (the committed networks through the onboard policy backends), :mod:`heightmap` (pitch and
roll read off the heightmap, thesis 6.1), :mod:`sim` (the surrogate loop: kinematic nets, pose update, terrain
net; PNG frames and MCAP).
"""
