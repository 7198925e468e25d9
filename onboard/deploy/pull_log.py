"""``python -m onboard.deploy BOARD --port PORT --pull-log OUT.mcap``: fetch a board's ring log and convert it.

The board's flight recorder (``boards/mp_common/mp_app.py``, :mod:`onboard.runtime.ring_log`) keeps
the app's recording in one file (``log_path`` of the board's manifest.json). This copies it with
``mpremote fs cp`` (the deploy's :class:`onboard.deploy.device.Device`: a timeout on every call) to
``OUT.bin`` beside ``OUT.mcap`` and writes its records into ``OUT.mcap`` with
:class:`onboard.runtime.mcap_log.McapLog` on the host recording's topics and sample schemas
(``/app/config``, ``/app/in/<entry>``, ``/app/step``, ``/app/out/<name>``), so
``python -m harness replay OUT.mcap`` re-runs the recorded app.

The MCAP ends right before the log's last ``/app/step``: the app may have stopped (or the log been
cut) anywhere inside its last tick, whose outputs would then be missing. A damaged log converts what
is readable: records whose CRC fails are dropped and counted, a torn last write is counted; a log that
wrapped holds only its newest records, from which a replay (starting from the recipe's initial state)
is not expected to match. CPython only.
"""
import os

from onboard.deploy import device as dev
from onboard.deploy.build import DeployError, load_manifest
from onboard.runtime.replay_feed import CONFIG_TOPIC, STEP_TOPIC, before_last_tick

EXIT_NO_LOG = 7           # no log on the board, or nothing readable in it
EXIT_LOG_DAMAGED = 8      # converted, but records were dropped, torn or undecodable


class NoLog(DeployError):
    exit_code = EXIT_NO_LOG


def fetch(manifest, port, local_path, timeout_s=10.0, log=None):
    """Copy the board's ring log (``manifest["log_path"]``) to ``local_path`` with mpremote."""
    remote = manifest.get("log_path")
    if not remote or not manifest.get("log_bytes"):
        raise NoLog("board %s keeps no ring log (its manifest.json has no log_path / log_bytes)"
                    % manifest.get("board"))
    folder = os.path.dirname(os.path.abspath(local_path))
    if not os.path.isdir(folder):
        # mpremote would say "No such file or directory", which reads as no log on the board
        raise DeployError("cannot write the raw log %s: the folder %s does not exist" % (local_path, folder), 2)
    device = dev.Device(port, timeout_s=timeout_s, log=log)
    try:
        device.run(["fs", "cp", ":" + remote, local_path], payload_bytes=manifest["log_bytes"])
    except dev.NoBoard:
        raise
    except DeployError as exc:
        if "ENOENT" in str(exc) or "doesn't exist" in str(exc) or \
                ("No such file" in str(exc) and remote.lstrip("/") in str(exc)):
            raise NoLog("no log on the board on %s: %s does not exist (LOG_BYTES 0, or the app has not "
                        "started since the deploy?)" % (port, remote))
        raise
    if not os.path.isfile(local_path):
        raise NoLog("mpremote copied nothing from %s on %s" % (remote, port))


def convert(contents, out_path):
    """Write a read ring log (:class:`onboard.runtime.ring_log.RingLogContents`) into the MCAP file
    ``out_path``. -> counts: records written, ticks, and the records left out after the last step."""
    from onboard.runtime.mcap_log import McapLog
    records = contents.records
    kept = before_last_tick(records)
    mcap = McapLog(out_path, library="onboard-ring-log")
    try:
        if contents.config is not None:
            mcap.log(CONFIG_TOPIC, contents.config_time_us or 0, contents.config)
        for topic, time_us, _, msg in kept:
            mcap.log(topic, time_us, msg)
    finally:
        mcap.close()
    return {"written": len(kept) + (1 if contents.config is not None else 0),
            "ticks": sum(1 for r in kept if r[0] == STEP_TOPIC), "left_out": len(records) - len(kept)}


def describe(contents, counts):
    """One line: what was converted, and what was lost."""
    s = contents.summary()
    parts = ["%d records (%d ticks) of session %s" % (counts["written"], counts["ticks"], s["session"])]
    if counts["left_out"]:
        parts.append("%d after the last tick's start left out" % counts["left_out"])
    if s["dropped"]:
        parts.append("%d dropped (CRC failed)" % s["dropped"])
    if s["torn"]:
        parts.append("last write torn")
    if s["undecodable"]:
        parts.append("%d undecodable" % s["undecodable"])
    if s["truncated_bytes"]:
        parts.append("file %d bytes short" % s["truncated_bytes"])
    if not s["header_ok"]:
        parts.append("header unreadable")
    if s["last_seq"] is not None and s["last_seq"] < s["first_seq"]:
        # the u32 sequence passed 2**32 between the oldest and the newest kept record (ring_log's serial order):
        # more than 2**32 records were written, how many more is not in the log
        parts.append("wrapped: older records were overwritten, more than 2**32 in the session (a replay starts "
                     "mid-run and is not expected to match)")
    elif s["first_seq"]:
        parts.append("wrapped: the oldest %d records were overwritten (a replay starts mid-run and is not "
                     "expected to match)" % s["first_seq"])
    if contents.config is None:
        parts.append("no /app/config (replay cannot rebuild the app)")
    return "; ".join(parts)


def raw_log_path(out_path):
    """Where :func:`pull_log` keeps the fetched raw log of ``out_path`` (OUT.mcap): ``OUT.bin`` beside it."""
    return os.path.splitext(out_path)[0] + ".bin"


def pull_log(board, port, out_path, timeout_s=10.0, log=print, boards_dir=None, log_bin=None):
    """Fetch (or, with ``log_bin``, take that local copy of) the board's ring log and write ``out_path``
    (MCAP). -> result dict (``exit_code`` 0, or EXIT_LOG_DAMAGED when records were lost); DeployError (exit 2)
    when ``out_path`` cannot be written."""
    from onboard.runtime.ring_log import read_log
    manifest = load_manifest(board, boards_dir)
    folder = os.path.dirname(os.path.abspath(out_path))
    if not os.path.isdir(folder):             # before the board's app is interrupted for its log
        raise DeployError("cannot write %s: the folder %s does not exist" % (out_path, folder), 2)
    if log_bin is None:
        local = raw_log_path(out_path)
        fetch(manifest, port, local, timeout_s=timeout_s)
    else:
        local = log_bin
    try:
        with open(local, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise NoLog("cannot read the ring log %s: %s" % (local, exc))
    contents = read_log(data)
    if not contents.records and contents.config is None:
        raise NoLog("%s holds no readable ring log records (%d bytes, header %s)"
                    % (local, len(data), "valid" if contents.header_ok else "unreadable"))
    try:
        counts = convert(contents, out_path)
    except OSError as exc:
        raise DeployError("cannot write %s: %s" % (out_path, exc.strerror or exc), 2)
    line = describe(contents, counts)
    damaged = contents.damaged
    log("%s: %s -> %s" % (local, line, out_path))
    result = dict(contents.summary(), **counts)
    result.update({"bin": local, "mcap": out_path, "summary": line,
                   "exit_code": EXIT_LOG_DAMAGED if damaged else 0})
    return result
