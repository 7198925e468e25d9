"""mp-board's pulled ring log: the log_* metrics of a replay that differs in shape from the log (the largest
difference is infinite there, harness.replay, and metrics.json holds finite JSON only, so it reads null), and
the ``pull_log`` path (an .mcap file: its raw copy goes beside it as OUT.bin)."""
import json

import pytest

from harness.config import ConfigError
from harness.replay import compare_outputs
from harness.scenarios import check_metrics, prepare
from harness.scenarios.mp_board import replay_log_metrics

PULLED = {"dropped": 0, "torn": 0, "summary": "12 records"}
BOARD_LOG = {"records": 12, "bytes": 480, "wraps": 0, "session": 1, "error": ""}


def _replay(logged, replayed):
    return {"ticks": 3, "inputs": 5, "topics": compare_outputs(logged, replayed)}


def test_a_replay_that_differs_in_shape_reports_null_not_infinity():
    logged = {"/app/out/estimate": [(10000, {"north_m": 1.0, "east_m": 2.0})]}
    replayed = {"/app/out/estimate": [(10000, {"north_m": 1.0})]}            # a field missing: no number
    m = replay_log_metrics(BOARD_LOG, PULLED, _replay(logged, replayed), None)
    assert m["log_replay_max_abs_diff"] is None
    assert m["log_replay_counts_match"] is True
    check_metrics("mp-board", dict(m, success=False))                        # finite JSON: no ContractError
    json.dumps(m, allow_nan=False)


def test_a_replay_that_differs_in_numbers_reports_the_difference():
    logged = {"/app/out/estimate": [(10000, {"north_m": 1.0, "east_m": 2.0})]}
    replayed = {"/app/out/estimate": [(10000, {"north_m": 1.25, "east_m": 2.0})]}
    m = replay_log_metrics(BOARD_LOG, PULLED, _replay(logged, replayed), None)
    assert m["log_replay_max_abs_diff"] == 0.25
    assert m["log_bytes_per_record"] == 40.0


@pytest.mark.parametrize("name", ["board_log.bin", "board_log", "board_log.mcap.txt"])
def test_a_pull_log_path_that_is_no_mcap_file_is_refused(tmp_path, name):
    """``board_log.bin`` was taken: the raw copy (OUT.bin beside OUT.mcap) and the MCAP were then one file."""
    path = str(tmp_path / name)
    with pytest.raises(ConfigError, match=r"^setting config.pull_log: .* is not an \.mcap file path"):
        prepare("mp-board", {"pull_log": path})
