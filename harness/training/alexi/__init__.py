"""Training of Alexi, the learned fast simulator of the terrain-leveling thesis (Cook 2017, ch. 6), on the
Sandbox reference's logs: :mod:`preprocess` (cull, min-max, smoothing, 9-level quantisation), :mod:`dataset`
(inputs and targets from sessions), :mod:`metrics` (MSE, R^2, Spearman), :mod:`models` (V1, V2 and terrain nets
in torch), :mod:`export` (int8 .tflite + card), :mod:`train` (the CLI, ``make train-alexi``).
"""
