"""The grading policy network (ag2u section IV-A): a ResNet-style fully convolutional net.

Input: the observation crop (1 x H x W, metres above target, scaled by ``input_scale``).
Body: ``layers`` 3x3 convolutions with ``channels`` channels, dilation ``dilation``,
ReLU, residual connections every two layers (the paper: 8 layers, 64 channels,
dilation 2). Head: a 1x1 convolution to 2 maps (H x W x 2): logits of the green
(push target) and red (next leg start) way-points; the decision is each map's argmax.

``forward_numpy`` is the same network in NumPy (float32, im2col), used by the harness
to run trained float weights without PyTorch; the onboard int8 path runs the exported
.tflite through onboard.policy.
"""
import numpy as np

DEFAULTS = {"layers": 8, "channels": 32, "dilation": 2, "input_scale": 10.0}


def conv2d_same(x, w, b, dilation):
    """x [C, H, W], w [O, C, k, k], 'same' zero padding, stride 1 -> [O, H, W] (in x's and w's
    common dtype: float32 for the runtime, float64 for the int8 export's reference)."""
    c, h, wd = x.shape
    o, _, k, _ = w.shape
    pad = dilation * (k // 2)
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    cols = np.empty((c, k, k, h, wd), dtype=np.result_type(x, w))
    for i in range(k):
        for j in range(k):
            cols[:, i, j] = xp[:, i * dilation:i * dilation + h, j * dilation:j * dilation + wd]
    # einsum's own single-threaded loop, not BLAS: these matrices are tiny, and a multi-threaded BLAS
    # on a busy machine was measured 30-100x slower than one thread (53-330 ms vs 4 ms per decision)
    out = np.einsum("ok,kn->on", w.reshape(o, -1), cols.reshape(c * k * k, h * wd))
    return (out + b[:, None]).reshape(o, h, wd)


def forward_numpy(weights, crop, config):
    """Logits [2, H, W] of one crop (float32 NumPy), from a dict of arrays named like the torch model."""
    x = (np.asarray(crop, dtype=np.float32) * config["input_scale"])[None]
    x = np.maximum(conv2d_same(x, weights["stem.weight"], weights["stem.bias"], 1), 0.0)
    for i in range(0, config["layers"], 2):
        y = np.maximum(conv2d_same(x, weights["body.%d.weight" % i], weights["body.%d.bias" % i],
                               config["dilation"]), 0.0)
        y = conv2d_same(y, weights["body.%d.weight" % (i + 1)], weights["body.%d.bias" % (i + 1)], config["dilation"])
        x = np.maximum(x + y, 0.0)
    return conv2d_same(x, weights["head.weight"], weights["head.bias"], 1)


def make_torch_model(config):
    """The same network as a torch.nn.Module (training only; torch is an optional extra)."""
    import torch
    from torch import nn

    class GradingFcn(nn.Module):
        def __init__(self):
            super().__init__()
            ch, d = config["channels"], config["dilation"]
            self.stem = nn.Conv2d(1, ch, 3, padding=1)
            self.body = nn.ModuleList([nn.Conv2d(ch, ch, 3, padding=d, dilation=d)
                                       for _ in range(config["layers"])])
            self.head = nn.Conv2d(ch, 2, 1)

        def forward(self, crop):
            x = torch.relu(self.stem(crop.unsqueeze(1) * config["input_scale"]))
            for i in range(0, len(self.body), 2):
                y = self.body[i + 1](torch.relu(self.body[i](x)))
                x = torch.relu(x + y)
            return self.head(x)

    return GradingFcn()
