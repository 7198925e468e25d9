"""The training commands' .npz files: reading a user's (one line naming the file when it cannot be read; the
grading trainer's ``--data`` / ``--init`` files and the swarm exporters' weights), and the swarm trainers' last
step, weights and training card written whole."""
import json
import os
import sys

import numpy as np

from harness.config import ConfigError
from harness.data_files import NPZ_READ_ERRORS, not_npz_reason, npz_bytes, read_error_reason
from harness.report.run_report import write_whole


def read_npz(path, what, build=dict):
    """``build({name: array})`` of the .npz at ``path`` (default: that dict); ConfigError (one line naming
    ``what`` and the file) when it is missing, empty, no .npz or damaged, or ``build`` refuses its arrays (a
    missing array: KeyError, wrong shapes: ValueError; an array with too few dimensions or of the wrong type:
    IndexError, TypeError)."""
    reason = not_npz_reason(path)
    try:
        if reason:
            raise ValueError(reason)
        with np.load(path) as f:
            arrays = {k: f[k] for k in f.files}
    except NPZ_READ_ERRORS as exc:
        raise ConfigError("%s %s: %s" % (what, path, read_error_reason(exc)))
    try:
        return build(arrays)
    except NPZ_READ_ERRORS as exc:
        raise ConfigError("%s %s: %s" % (what, path, read_error_reason(exc)))
    except (IndexError, TypeError) as exc:
        raise ConfigError("%s %s: an array has the wrong shape or type (%s)" % (what, path, exc))


def save_weights(out_dir, weights, card, tool):
    """Write ``weights`` ({name: array}) as ``weights.npz`` and ``card`` as ``train_card.json`` into ``out_dir``,
    each whole; returns the exit status: 0, or 2 after one line on stderr naming ``tool`` when they cannot be
    written (the trainers' last step)."""
    text = json.dumps(card, indent=2, default=float) + "\n"
    try:
        write_whole(os.path.join(out_dir, "weights.npz"), npz_bytes(weights))
        write_whole(os.path.join(out_dir, "train_card.json"), text)
    except OSError as exc:
        print("%s: cannot write %s: %s" % (tool, out_dir, exc.strerror or exc), file=sys.stderr)
        return 2
    print("wrote", out_dir)
    return 0
