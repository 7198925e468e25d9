"""Deciders for grading episodes: the trained agents (and the expert, in episode.py).

A policy decider renders the observation at the dozer's *estimated* pose, takes the
argmax of each way-point map and maps the pixels back to the world through that same
estimated pose (ag2u fig. 1). The episode ends when the environment says the work
area is graded (the expert's criterion on the true state), not by the agent.
"""
import json
import os

import numpy as np

from harness.grading.fcn import DEFAULTS as FCN_DEFAULTS, forward_numpy
from harness.grading.observation import ObservationRenderer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL_DIR = os.path.join(REPO, "models", "grading")


class ModelError(ValueError):
    pass


def load_agent(name, model_dir=MODEL_DIR):
    """(weights dict, card dict) of a committed agent; clear error when missing or corrupt."""
    folder = os.path.join(model_dir, name)
    try:
        with open(os.path.join(folder, "card.json")) as fh:
            card = json.load(fh)
        with np.load(os.path.join(folder, "weights.npz")) as data:
            weights = {k: data[k] for k in data.files}
    except (OSError, ValueError, json.JSONDecodeError) as exc:
        raise ModelError("cannot load grading agent %r from %s: %s" % (name, folder, exc))
    return weights, card


class PolicyDecider:
    def __init__(self, weights, card):
        self.weights = weights
        self.fcn = dict(FCN_DEFAULTS, **card["network"])
        self.renderer = ObservationRenderer(card["input"]["observation"])

    def decide_from_crop(self, crop, pose_ne_yaw):
        logits = forward_numpy(self.weights, crop, self.fcn)
        rows, cols = crop.shape
        points = []
        for m in range(2):
            row, col = divmod(int(np.argmax(logits[m])), cols)
            f, r = self.renderer.pixel_to_body(row, col)
            points.append(self.renderer.body_to_world(pose_ne_yaw, f, r))
        return points[0], points[1]

    def __call__(self, episode):
        if episode.expert.decide(episode.world, episode.target_level_m, episode.true_pose()[:2]) is None:
            return None                                   # environment: area graded
        pose = episode.estimated_pose()
        crop = self.renderer.render(episode.world, pose)
        return self.decide_from_crop(crop, pose)
