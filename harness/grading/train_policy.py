"""Train the grading agents by imitation of the expert (ag2u section III-B, IV-A).

agent1: crops at the true pose; agent2: crops at poses drawn from the filter's
N(x_est, Sigma) (eq. 1), same labels in each crop's frame. Adam, lr 1e-3, cross
entropy over the H*W pixels of each way-point map. Writes
``models/grading/<agent>/weights.npz`` and ``card.json``.

    .venv/bin/python -m harness.grading.train_policy --help

Needs PyTorch (``pip install -r requirements-train.txt``); the runtime and the
tests do not.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

from harness.grading import dataset
from harness.grading.fcn import DEFAULTS as FCN_DEFAULTS, make_torch_model
from harness.grading.observation import DEFAULTS as OBS_DEFAULTS

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL_DIR = os.path.join(REPO, "models", "grading")


def train(agent, data, seed, epochs, fcn_config, k_samples, log=print):
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    crops, greens, reds = dataset.crops_and_labels(data, agent, rng, k_samples=k_samples)
    model = make_torch_model(fcn_config)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.from_numpy(crops)
    yg = torch.from_numpy(greens)
    yr = torch.from_numpy(reds)
    n = len(x)
    batch = 32
    for epoch in range(epochs):
        perm = torch.from_numpy(rng.permutation(n))
        total = 0.0
        for s in range(0, n, batch):
            idx = perm[s:s + batch]
            logits = model(x[idx]).flatten(2)             # [B, 2, H*W]
            loss = (torch.nn.functional.cross_entropy(logits[:, 0], yg[idx])
                    + torch.nn.functional.cross_entropy(logits[:, 1], yr[idx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        if epoch % max(1, epochs // 10) == 0 or epoch == epochs - 1:
            log("%s epoch %d/%d loss %.3f (%d crops)" % (agent, epoch + 1, epochs, total / n, n))
    weights = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    return weights, {"final_loss": total / n, "train_crops": n}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m harness.grading.train_policy",
                                 description="Train agent1/agent2 grading policies by imitation (ag2u).")
    ap.add_argument("--episodes", type=int, default=60, help="expert episodes for the dataset (default 60)")
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--channels", type=int, default=FCN_DEFAULTS["channels"])
    ap.add_argument("--layers", type=int, default=FCN_DEFAULTS["layers"])
    ap.add_argument("--k-samples", type=int, default=8, help="eq. 1 poses per decision for agent2")
    ap.add_argument("--out", default=MODEL_DIR)
    args = ap.parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("error: training needs PyTorch: .venv/bin/pip install -r requirements-train.txt", file=sys.stderr)
        return 2
    fcn_config = dict(FCN_DEFAULTS, channels=args.channels, layers=args.layers)
    t0 = time.perf_counter()
    data = dataset.collect(args.episodes, seed=args.seed, noise="sensor_fusion")
    print("dataset: %d decisions from %d episodes (%.1f s)" % (len(data["true_pose"]), args.episodes,
                                                               time.perf_counter() - t0))
    for agent in ("agent1", "agent2"):
        weights, stats = train(agent, data, args.seed, args.epochs, fcn_config, args.k_samples)
        out = os.path.join(args.out, agent)
        os.makedirs(out, exist_ok=True)
        np.savez(os.path.join(out, "weights.npz"), **weights)
        card = {
            "name": "grading-" + agent,
            "paper": "ag2u-grading-under-uncertainty, sections III-B, IV-A",
            "input": {"shape": [OBS_DEFAULTS["rows"], OBS_DEFAULTS["cols"]], "meaning":
                      "heightmap crop in the dozer frame (row 0 farthest ahead), metres above target",
                      "observation": OBS_DEFAULTS},
            "output": {"shape": [2, OBS_DEFAULTS["rows"], OBS_DEFAULTS["cols"]],
                       "meaning": "logits of green (push target) and red (next leg start) way-points"},
            "network": fcn_config,
            "training": {"seed": args.seed, "episodes": args.episodes, "decisions": len(data["true_pose"]),
                         "epochs": args.epochs, "optimizer": "Adam lr 1e-3",
                         "observations": "true pose" if agent == "agent1"
                         else "true pose + %d poses from N(x_est, Sigma) (eq. 1)" % args.k_samples},
            "metrics": stats,
        }
        with open(os.path.join(out, "card.json"), "w") as fh:
            json.dump(card, fh, indent=2)
            fh.write("\n")
        print("wrote", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
