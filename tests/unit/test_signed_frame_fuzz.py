"""The signed-frame layer against 1e5 forged and 1e5 replayed frames (seeded): none is accepted, no exception
escapes, and the verifier's state (last counters, saved mark) is what the genuine frames left."""
import hmac
import hashlib

import numpy as np

from onboard.comms import signed_frame as sf

KEY = bytes(range(32))
N_FORGED = 100000
N_REPLAYED = 100000


def _genuine(n, link_id=0):
    signer = sf.FrameSigner(KEY, key_id=1, link_id=link_id)
    rng = np.random.default_rng(7)
    return [signer.frame(bytes(rng.integers(0, 256, int(rng.integers(0, 64)), dtype=np.uint8))) for _ in range(n)]


def _mutations(frames, rng, n):
    """Every way an attacker without the key can make a frame: bit flips and byte changes anywhere (header,
    counter, payload, tag), truncation, extension, splices of two frames, a fresh counter with the old tag,
    random tags, random bytes."""
    out = []
    for k in range(n):
        base = bytearray(frames[int(rng.integers(0, len(frames)))])
        kind = k % 7
        if kind == 0:
            i = int(rng.integers(0, len(base)))
            base[i] ^= 1 << int(rng.integers(0, 8))
        elif kind == 1:
            for i in rng.integers(0, len(base), int(rng.integers(1, 5))):
                base[int(i)] = int(rng.integers(0, 256))
        elif kind == 2:
            base = base[:int(rng.integers(0, len(base)))]
        elif kind == 3:
            base += bytes(rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8))
        elif kind == 4:
            other = frames[int(rng.integers(0, len(frames)))]
            cut = int(rng.integers(0, min(len(base), len(other))))
            base = base[:cut] + bytearray(other[cut:])
        elif kind == 5:                                   # a newer counter, the old tag
            counter = int.from_bytes(bytes(base[3:9]), "little") + int(rng.integers(1, 1 << 20))
            base[3:9] = counter.to_bytes(6, "little")
        else:
            base = bytearray(rng.integers(0, 256, int(rng.integers(0, 80)), dtype=np.uint8))
            if len(base) > 0 and rng.random() < 0.5:
                base[0] = sf.MAGIC
        out.append(bytes(base))
    return out


def test_hmac_is_the_standard_one():
    rng = np.random.default_rng(3)
    for _ in range(200):
        key = bytes(rng.integers(0, 256, int(rng.integers(1, 150)), dtype=np.uint8))
        msg = bytes(rng.integers(0, 256, int(rng.integers(0, 300)), dtype=np.uint8))
        assert sf.hmac_sha256(key, msg) == hmac.new(key, msg, hashlib.sha256).digest()


def test_forged_frames_are_never_accepted():
    frames = _genuine(500)
    verifier = sf.FrameVerifier({1: KEY})
    accepted_genuine = [verifier.open(f) for f in frames[:250]]
    assert all(p is not None for p in accepted_genuine)
    state = (dict(verifier.last), verifier.saved_mark)
    genuine = set(frames)              # a mutation can give back a genuine frame (a splice at equal bytes)
    forged = [f for f in _mutations(frames, np.random.default_rng(11), N_FORGED * 21 // 20) if f not in genuine]
    forged = forged[:N_FORGED]
    assert len(forged) == N_FORGED
    assert [f for f in forged if verifier.open(f) is not None] == []
    assert (dict(verifier.last), verifier.saved_mark) == state
    c = verifier.counts
    assert c["accepted"] == 250 and c["malformed"] + c["unknown_key"] + c["bad_tag"] + c["replayed"] == len(forged)
    # the genuine frames not yet seen still open: the forgeries cost nothing
    assert all(verifier.open(f) is not None for f in frames[250:])


def test_replayed_frames_are_never_accepted():
    frames = _genuine(1000)
    verifier = sf.FrameVerifier({1: KEY})
    assert all(verifier.open(f) is not None for f in frames)
    rng = np.random.default_rng(5)
    picks = rng.integers(0, len(frames), N_REPLAYED)
    assert sum(verifier.open(frames[int(i)]) is not None for i in picks) == 0
    assert verifier.counts["replayed"] == N_REPLAYED and verifier.counts["accepted"] == 1000
