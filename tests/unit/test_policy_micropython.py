"""The committed 7-100-100-9 model run by the pure kernel inside real MicroPython: same int8
outputs as LiteRT (model bytes travel as base64; binascii decodes them there)."""
import base64
import json
import os

import numpy as np
import pytest

from harness.sim.micropython import available, onboard_files, run_micropython
from onboard.policy.policy import load_model_dir, make_policy

pytestmark = pytest.mark.micropython
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DQN_DIR = os.path.join(REPO, "models", "pocket-dqn")

MP_CODE = """
import binascii, json
from onboard.policy.policy import PurePolicy
import _model_data
policy = PurePolicy(binascii.a2b_base64(_model_data.B64.encode()))
for x in json.loads(_model_data.INPUTS):
    print("OUT " + json.dumps(policy.run([x])[0]))
"""


def model_files(data, inputs):
    files = onboard_files()
    files["/lib/_model_data.py"] = "B64 = %r\nINPUTS = %r\n" % (
        base64.b64encode(data).decode(), json.dumps(inputs))
    return files


def test_dqn_in_micropython_matches_litert():
    if not available():
        pytest.fail("MicroPython (node + npm package) is missing: run `make setup`")
    data, card = load_model_dir(DQN_DIR)
    rng = np.random.default_rng(4)
    x = rng.integers(-128, 128, (40, 7))
    x[:8] = rng.choice([-128, 127], (8, 7))
    out = run_micropython(MP_CODE, model_files(data, x.tolist()))
    mp = [json.loads(line[4:]) for line in out.splitlines() if line.startswith("OUT ")]
    ref = make_policy(data, card, "litert").run_batch_q(x).tolist()
    assert mp == ref
