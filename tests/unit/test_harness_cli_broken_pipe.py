"""`python -m harness ... | head`: a reader that goes away early ends the CLI quietly (exit 141)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_settings_with_closed_stdout_pipe_exits_quietly():
    read_end, write_end = os.pipe()
    os.close(read_end)           # the reader is gone before the CLI writes a byte: every write hits EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "harness", "settings", "grading"], cwd=ROOT,
                              stdout=write_end, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(write_end)
    err = proc.stderr.decode()
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert proc.returncode == 141
