"""harness.sweep_runner: a Ray address whose port is no TCP port (0, negative, above 65535) is refused as no
address (not tried as another port, which the OS would make of it), and a job result with a NaN or an infinity is
stored as a pickle, so every ``jobs/<key>.json`` record is standard JSON, and a resumed sweep gives it back."""
import json
import math
import os

import pytest

from harness.sweep_runner import EngineError, Job, Runner, _check_reachable


def with_nan(seed):
    return {"seed": seed, "ratio": float("nan"), "peak": float("inf"), "pair": (seed, seed)}


def plain(seed):
    return {"seed": seed, "pair": (seed, seed)}


@pytest.mark.parametrize("address", ["127.0.0.1:99999", "127.0.0.1:65536", "127.0.0.1:0", "127.0.0.1:-1",
                                     "[::1]:70000"])
def test_a_port_outside_the_tcp_ports_is_no_address(address):
    with pytest.raises(EngineError, match=r"--address expects HOST:PORT .*got '%s'" % address.replace("[", r"\[")):
        _check_reachable(address, timeout_s=0.5)


def test_a_result_with_non_finite_numbers_is_no_json_record_and_resumes_the_same(tmp_path):
    jobs = [Job(with_nan, (1,)), Job(plain, (2,))]
    first = Runner().run(jobs, out_dir=str(tmp_path))
    names = sorted(os.listdir(tmp_path / "jobs"))
    assert names == sorted([jobs[0].key + ".pkl", jobs[1].key + ".json"])
    for name in names:
        if name.endswith(".json"):
            json.loads((tmp_path / "jobs" / name).read_text(), parse_constant=lambda c: pytest.fail(c))
    again = Runner().run(jobs, out_dir=str(tmp_path), resume=True)
    assert again.timing["resumed"] == 2
    for a, b in zip(first.results, again.results):
        assert a.keys() == b.keys() and a["pair"] == b["pair"] and a["seed"] == b["seed"]
    assert math.isnan(again.results[0]["ratio"]) and again.results[0]["peak"] == math.inf
    assert first.results[1] == again.results[1] == {"seed": 2, "pair": [2, 2]}
