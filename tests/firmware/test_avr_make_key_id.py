"""firmware/arduino/Makefile: KEY_ID is a decimal number (PROTOCOL.md section 10, `make KEY=file KEY_ID=n`);
written with leading zeros it is still that number in the firmware's link_key.h, never a C octal literal
(010 would be key id 8, 08 would not compile)."""
import os
import re
import subprocess

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIRMWARE_DIR = os.path.join(REPO_ROOT, "firmware", "arduino")
KEY_HEX = "000102030405060708090a0b0c0d0e0f"          # a test key (never a robot's)


def _key_header(tmp_path, key_id):
    key = tmp_path / "test.key"
    key.write_text(KEY_HEX + "\n")
    build = tmp_path / "build"
    header = build / "uno" / "gen" / "link_key.h"
    proc = subprocess.run(["make", "-s", "-C", FIRMWARE_DIR, "BUILD=%s" % build, "KEY=%s" % key,
                           "KEY_ID=%s" % key_id, str(header)], capture_output=True, text=True, timeout=60)
    return proc, header


@pytest.mark.parametrize("key_id,want", [("010", 10), ("08", 8), ("007", 7), ("0", 0), ("00", 0), ("255", 255)])
def test_key_id_with_leading_zeros_is_decimal(tmp_path, key_id, want):
    proc, header = _key_header(tmp_path, key_id)
    assert proc.returncode == 0, proc.stderr
    (line,) = [ln for ln in header.read_text().splitlines() if ln.startswith("#define LINK_KEY_ID ")]
    value = line.split()[2]
    assert re.fullmatch(r"0|[1-9][0-9]*", value), line      # a C decimal literal
    assert int(value) == want


@pytest.mark.parametrize("key_id", ["256", "0256", "x1", "-1", ""])
def test_bad_key_id_still_refused(tmp_path, key_id):
    proc, header = _key_header(tmp_path, key_id)
    assert proc.returncode != 0 and "KEY_ID must be 0..255" in proc.stderr
    assert not header.exists()
