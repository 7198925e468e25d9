"""MCAP log of every sample and command, JSON-encoded with a JSON schema per topic (CPython only).

Used by the harness reports and by boards that run CPython (Raspberry Pi) alike.

Foxglove opens these files directly (message encoding ``json``, schema encoding
``jsonschema``). Log time is the simulated (or board) time in nanoseconds.

Messages go out in zstd-compressed chunks of ``CHUNK_BYTES`` (uncompressed), each with its CRC:
a log cut short by a crash or power loss keeps every whole chunk before the cut (at most the last
``CHUNK_BYTES`` of messages are lost; ``harness replay`` replays such a prefix).
"""
import json
import math

from mcap.writer import CompressionType, Writer

CHUNK_BYTES = 64 * 1024


def _json_type(value):
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, (list, tuple)):
        return {"type": "array", "items": _json_type(value[0]) if value else {}}
    if isinstance(value, dict):
        return {"type": "object", "properties": {k: _json_type(v) for k, v in value.items()}}
    return {}


def _clean(value):
    """NaN/inf are not JSON: logged as null so the file stays valid."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


class McapLog:
    def __init__(self, path, library="onboard-runtime"):
        self.path = path
        self._fh = open(path, "wb")
        self._writer = Writer(self._fh, chunk_size=CHUNK_BYTES, compression=CompressionType.ZSTD)
        self._writer.start(profile="", library=library)
        self._channels = {}
        self._seq = {}
        self.messages = 0
        self.closed = False

    def log(self, topic, time_us, message):
        """Log ``message`` (a sample with ``as_dict()`` or a dict) on ``topic`` at ``time_us``."""
        data = message.as_dict() if hasattr(message, "as_dict") else dict(message)
        channel = self._channels.get(topic)
        if channel is None:
            schema_name = type(message).__name__ if hasattr(message, "as_dict") else topic.strip("/")
            schema = {"type": "object", "title": schema_name,
                      "properties": {k: _json_type(v) for k, v in data.items()}}
            schema_id = self._writer.register_schema(
                name=schema_name, encoding="jsonschema", data=json.dumps(schema).encode())
            channel = self._writer.register_channel(topic=topic, message_encoding="json",
                                                    schema_id=schema_id)
            self._channels[topic] = channel
            self._seq[topic] = 0
        t_ns = int(time_us) * 1000
        self._writer.add_message(channel_id=channel, log_time=t_ns, publish_time=t_ns,
                                 sequence=self._seq[topic],
                                 data=json.dumps(_clean(data), separators=(",", ":")).encode())
        self._seq[topic] += 1
        self.messages += 1

    def close(self):
        if not self.closed:
            self._writer.finish()
            self._fh.close()
            self.closed = True
