"""The Alexi networks in torch (training only) and their folding into plain layers for the int8 export.

- V1 (thesis 6.2.1): 4-20-1, tanh with FANN's steepness 0.5 on the hidden and output layers (tanh(0.5 x);
  reading aid A23), Glorot "normalised" initialisation U(+-sqrt(6 / (n_in + n_out))) (6.2.1).
- V2 (6.3.1): 13 hidden layers of 7 nodes, batch normalisation after each dense layer, tanh on every layer
  including the output, L2 1e-4 per layer (added to the loss, Keras's ``l2``), U(-0.05, 0.05) initialisation.
- Terrain (6.3.1): linear layers (``width`` x ``layers``; the thesis's 20 x 500 is a setting) with batch
  normalisation, from (4 kinematic inputs + the previous window's dh) to the window's dh.

:func:`fold` returns ``[(W [out, in], b [out], activation)]`` with the batch norm (eval statistics) and the
V1 steepness folded into the weights, the form :func:`harness.training.quantize.build_mlp_int8` exports.
"""
import math

import numpy as np
import torch
from torch import nn

BN_EPS = 1e-3           # Keras BatchNormalization's epsilon
BN_MOMENTUM = 0.01      # Keras's 0.99 moving-average momentum in torch's convention


class V1Net(nn.Module):
    def __init__(self, n_in=4, hidden=20, steepness=0.5):
        super().__init__()
        self.hidden = nn.Linear(n_in, hidden)
        self.out = nn.Linear(hidden, 1)
        self.steepness = float(steepness)
        for layer in (self.hidden, self.out):
            a = math.sqrt(6.0 / (layer.in_features + layer.out_features))
            nn.init.uniform_(layer.weight, -a, a)
            nn.init.uniform_(layer.bias, -a, a)

    def forward(self, x):
        h = torch.tanh(self.steepness * self.hidden(x))
        return torch.tanh(self.steepness * self.out(h))[:, 0]

    def l2(self):
        return 0.0


class _DenseBnStack(nn.Module):
    """``layers`` x (dense ``width`` -> batch norm), then a dense output of ``n_out``; L2 on every dense
    weight (added to the loss); weights and biases U(-init, init) (6.3.1)."""

    def __init__(self, n_in, width, layers, n_out, l2, init):
        super().__init__()
        self.dense = nn.ModuleList()
        self.bn = nn.ModuleList()
        w = n_in
        for _ in range(layers):
            self.dense.append(nn.Linear(w, width))
            self.bn.append(nn.BatchNorm1d(width, eps=BN_EPS, momentum=BN_MOMENTUM))
            w = width
        self.out = nn.Linear(w, n_out)
        self.l2_coeff = float(l2)
        for layer in list(self.dense) + [self.out]:
            nn.init.uniform_(layer.weight, -init, init)
            nn.init.uniform_(layer.bias, -init, init)

    def l2(self):
        return self.l2_coeff * sum((d.weight ** 2).sum() for d in list(self.dense) + [self.out])


class V2Net(_DenseBnStack):
    def __init__(self, n_in=4, hidden=7, layers=13, l2=1e-4, init=0.05):
        super().__init__(n_in, hidden, layers, 1, l2, init)

    def forward(self, x):
        h = x
        for d, b in zip(self.dense, self.bn):
            h = torch.tanh(b(d(h)))
        return torch.tanh(self.out(h))[:, 0]


class TerrainNet(_DenseBnStack):
    def __init__(self, n_in, n_out, width=64, layers=2, l2=1e-4, init=0.05):
        super().__init__(n_in, width, layers, n_out, l2, init)

    def forward(self, x):
        h = x
        for d, b in zip(self.dense, self.bn):
            h = b(d(h))                               # linear activation (6.3.1)
        return self.out(h)


def _bn_fold(dense, bn):
    w = dense.weight.detach().double().numpy()
    b = dense.bias.detach().double().numpy()
    s = bn.weight.detach().double().numpy() / np.sqrt(bn.running_var.detach().double().numpy() + bn.eps)
    return w * s[:, None], (b - bn.running_mean.detach().double().numpy()) * s + bn.bias.detach().double().numpy()


def fold(net):
    """Plain layers ``[(W, b, activation)]`` (float64) computing the eval-mode network."""
    if isinstance(net, V1Net):
        k = net.steepness
        return [(k * net.hidden.weight.detach().double().numpy(), k * net.hidden.bias.detach().double().numpy(),
                 "TANH"),
                (k * net.out.weight.detach().double().numpy(), k * net.out.bias.detach().double().numpy(), "TANH")]
    act = "TANH" if isinstance(net, V2Net) else "NONE"
    layers = [_bn_fold(d, b) + (act,) for d, b in zip(net.dense, net.bn)]
    layers.append((net.out.weight.detach().double().numpy(), net.out.bias.detach().double().numpy(), act))
    return layers
