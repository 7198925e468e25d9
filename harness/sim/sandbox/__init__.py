"""Sandbox: the reference simulator of the terrain-leveling thesis (Cook, ch. 5), rebuilt without Chrono.

A tracked robot on a deformable, tileable heightmap with Bekker pressure-sinkage, Janosi-Hanamoto
shear-displacement traction, slip, grade and compaction resistance, pitch and roll from the contact points,
bulldozing to the rut sides and erosion to the angle of repose, several substeps per frame, and by default
the contact test of every cell of the map at every substep, as Chrono's SCM (3.0) ray-casts every mesh
vertex at every step. It is deliberately richer (and slower) than the learned surrogate trained on its logs.

Modules: :mod:`terramechanics` (pure soil math), :mod:`terrain` (the tileable heightmap: sampling,
deformation, erosion), :mod:`tracked_robot` (the vehicle and its contact points), :mod:`world` (one robot
on one terrain, stepped frame by frame), :mod:`config` (the thesis's experiment INI, fig. 5.3),
:mod:`schedule` (the Alg. 5 command schedule), :mod:`session` (the per-frame table 5.1 log and terrain crops).
"""
