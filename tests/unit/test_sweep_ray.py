"""The sweep runner's Ray engine on a local Ray runtime that this module starts itself (loopback only,
2 CPUs, stopped at the end): the same per-seed metrics as the local engine, failures reported the same
way, and ``python -m harness sweep ... --engine ray --address HOST:PORT`` joining that runtime from
another process as it would join a cluster. Skipped where Ray is not installed."""
import json
import os
import subprocess
import sys

import pytest

from harness.config import ConfigError
from harness.sweep_cli import run_sweep
from harness.scenario_jobs import run_scenario
from harness.sweep_runner import EngineError, Runner, start_local_ray

ray = pytest.importorskip("ray")

# Ray's start-up takes ~10 s on a busy 2-core machine: one runtime for the module, the tests kept few
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEEDS = [1, 2, 3, 4]
AXES = {"imu.rate_hz": [100, 300]}          # 300 Hz is not a whole-microsecond period: that cell fails


@pytest.fixture(scope="module")
def ray_address():
    if ray.is_initialized():
        ray.shutdown()
    address = start_local_ray(2)
    yield address
    ray.shutdown()


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("local")
    run_sweep("waypoints", SEEDS, AXES, str(out), reduced=True, runner=Runner("local", 1))
    return out


def test_the_local_runtime_listens_on_the_loopback_interface_only(ray_address):
    assert ray_address.startswith("127.0.0.1:")
    assert {node["NodeManagerAddress"] for node in ray.nodes()} == {"127.0.0.1"}
    assert ray.cluster_resources()["CPU"] == 2


def test_ray_gives_the_local_engines_per_seed_metrics_and_reports_the_same_failures(ray_address, local_sweep,
                                                                                    tmp_path):
    with Runner("ray", workers=2) as runner:
        table, rows, result = run_sweep("waypoints", SEEDS, AXES, str(tmp_path), reduced=True, runner=runner)
        with pytest.raises(ConfigError, match="imu.rate_hz"):                     # the strict map, on Ray
            list(runner.map(run_scenario, [("waypoints", {}, 1, True), ("waypoints", {"imu": {"rate_hz": 300}},
                                                                         1, True)]))
    assert ray.is_initialized()                           # a runtime the runner did not start stays up
    for name in ("results.json", "table.json", "table.csv", "table.md"):
        assert (tmp_path / name).read_text() == (local_sweep / name).read_text(), name
    assert [(c["jobs"], c["failed"]) for c in table["cells"]] == [(4, 0), (4, 4)]
    assert {f["error"] for f in result.failures} == {"ConfigError"}
    timing = json.loads((tmp_path / "run.json").read_text())["timing"]
    assert timing["engine"] == "ray" and timing["workers"] == 2 and timing["address"] == ray_address
    assert all(j["overhead_s"] is not None for j in timing["per_job"])


def test_the_sweep_command_joins_a_running_ray_cluster_by_its_address(ray_address, local_sweep, tmp_path):
    out = tmp_path / "joined"
    proc = subprocess.run([sys.executable, "-m", "harness", "sweep", "waypoints", "--seeds", "1-4", "--reduced",
                           "--set", "imu.rate_hz=100,300", "--engine", "ray", "--address", ray_address,
                           "--workers", "2", "--quiet", "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3, proc.stderr                 # the 300 Hz cell's jobs failed, as reported
    assert "failed: cell imu.rate_hz=300, seed 4: ConfigError" in proc.stderr
    assert (out / "results.json").read_text() == (local_sweep / "results.json").read_text()
    assert json.loads((out / "run.json").read_text())["timing"]["address"] == ray_address


def test_an_address_where_no_cluster_listens_is_one_line_at_once(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "harness", "sweep", "waypoints", "--seeds", "1", "--engine", "ray",
                           "--address", "127.0.0.1:1", "--out", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert "no Ray cluster at 127.0.0.1:1" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def test_a_runner_refuses_another_address_than_the_runtime_it_is_on(ray_address):
    with pytest.raises(EngineError, match="already running"):
        Runner("ray", address="127.0.0.1:1").describe()
