"""UWB ranging protocol (pure, MicroPython-compatible): frames, DS/SS-TWR, token ring, broadcast.

Modules: ``timestamps`` (40-bit DW1000 time arithmetic, TWR formulas), ``frames``
(binary codec with CRC), ``token_ring`` (the paper's token-ring medium access with
DS-TWR), ``broadcast`` (scalable one-message-per-node-per-round ranging),
``config`` (settings), ``node_base`` (what both nodes share), ``node`` (``make_node``)
and ``driver`` (binds a node to a radio).
The modules import each other relatively (``from . import frames``): the same sources compiled as
``cython_ext.uwb`` (README.md, "Compiled build") then use each other's compiled versions.
See README.md in this folder. Nothing heavy is imported here.
"""
