"""Signed frames (onboard.comms.signed_frame), pure: runs under CPython (pytest) and inside MicroPython."""
from onboard.comms import signed_frame as sf

KEY = bytes(range(16, 48))
OTHER_KEY = bytes(range(100, 132))


def test_hmac_matches_rfc4231_test_cases():
    """RFC 4231 test cases 1, 2 and 6 (a key longer than the block)."""
    cases = [
        (b"\x0b" * 20, b"Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        (b"Jefe", b"what do ya want for nothing?", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        (b"\xaa" * 131, b"Test Using Larger Than Block-Size Key - Hash Key First",
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
    ]
    for key, msg, expected in cases:
        assert sf.hmac_sha256(key, msg).hex() == expected


def test_a_signed_frame_opens_once_and_carries_its_payload():
    signer = sf.FrameSigner(KEY, key_id=3, link_id=1)
    verifier = sf.FrameVerifier({3: KEY})
    frame = signer.frame(b"P,1,2,3")
    assert len(frame) == sf.OVERHEAD_BYTES + 7
    assert verifier.open(frame) == b"P,1,2,3"
    assert verifier.open(frame) is None                       # the same frame again: a replay
    assert verifier.counts["accepted"] == 1 and verifier.counts["replayed"] == 1


def test_forged_truncated_unknown_and_reordered_frames_are_dropped_and_counted():
    signer = sf.FrameSigner(KEY, key_id=0, link_id=0)
    verifier = sf.FrameVerifier({0: KEY})
    first = signer.frame(b"one")
    second = signer.frame(b"two")
    flipped = bytearray(second)
    flipped[sf.HEADER_BYTES] ^= 0x01                           # one payload bit
    assert verifier.open(bytes(flipped)) is None
    assert verifier.open(second[:-1]) is None                  # truncated
    assert verifier.open(sf.FrameSigner(OTHER_KEY, key_id=0).frame(b"two")) is None   # wrong key
    assert verifier.open(sf.FrameSigner(KEY, key_id=9).frame(b"two")) is None         # key id not provisioned
    assert verifier.counts == {"accepted": 0, "malformed": 1, "unknown_key": 1, "bad_tag": 2, "replayed": 0}
    assert verifier.last == {}                                 # nothing dropped moved a counter
    assert verifier.open(second) == b"two"
    assert verifier.open(first) is None                        # older than the last accepted: reordered
    assert verifier.counts["replayed"] == 1


def test_links_keep_their_own_counters():
    verifier = sf.FrameVerifier({0: KEY})
    a = sf.FrameSigner(KEY, link_id=1, counter=500)
    b = sf.FrameSigner(KEY, link_id=2)
    assert verifier.open(a.frame(b"a")) == b"a"
    assert verifier.open(b.frame(b"b")) == b"b"                # counter 1 on link 2 is fresh


def test_a_reboot_never_accepts_an_old_counter():
    """The verifier saves a mark reserve ahead of what it accepted; after a reboot it refuses every frame at
    or below the saved mark (a recorded frame cannot be replayed) and accepts the sender's next ones."""
    saved = []
    signer = sf.FrameSigner(KEY)
    verifier = sf.FrameVerifier({0: KEY}, persist=saved.append, reserve=10)
    recorded = [signer.frame(b"%d" % k) for k in range(25)]
    for frame in recorded:
        assert verifier.open(frame) is not None
    assert saved == [11, 21, 31]                 # 3 flash writes for 25 frames
    rebooted = sf.FrameVerifier({0: KEY}, floor=saved[-1], reserve=10)
    assert all(rebooted.open(frame) is None for frame in recorded)
    assert rebooted.counts["replayed"] == 25
    fresh = signer.frame(b"go", stamp=saved[-1] + 1)           # a time-stamped sender is past the mark
    assert rebooted.open(fresh) == b"go"


def test_bad_keys_and_ids_are_refused_with_one_line():
    for bad in (lambda: sf.FrameSigner(b"short"), lambda: sf.FrameSigner(KEY, key_id=256),
                lambda: sf.key_from_hex("zz"), lambda: sf.FrameVerifier({})):
        try:
            bad()
        except sf.SigningError as exc:
            assert "\n" not in str(exc)
        else:
            raise AssertionError("accepted")
    assert sf.key_from_hex(KEY.hex() + "\n") == KEY
    assert KEY.hex() not in repr(sf.FrameVerifier({0: KEY}).report())


def test_signed_lines_of_the_line_link_round_trip_and_refuse_the_rest():
    from onboard.comms import line_link as ll
    signer = sf.FrameSigner(KEY)
    verifier = sf.FrameVerifier({0: KEY})
    line = ll.encode("T", ["1000"])
    signed = ll.sign_line(signer, line)
    assert signed[:1] == b"~" and signed[-1:] == b"\n"
    assert ll.open_signed_line(verifier, signed) == line.strip()
    for bad in (line, signed, b"~not hex\n"):
        try:
            ll.open_signed_line(verifier, bad)
        except ll.LinkError:
            pass
        else:
            raise AssertionError("opened %r" % (bad,))


def test_a_mark_that_could_not_be_saved_is_saved_again_and_no_replay_after_the_reboot():
    """``persist`` raising (flash full or failing) leaves the verifier as it was: the frame is not accepted,
    and the next fresh frame tries to save the mark again, so a reboot never accepts a frame that was
    accepted before it (the mark in memory must not run ahead of the one saved)."""
    saved = []
    failing = [True]

    def persist(mark):
        if failing[0]:
            raise OSError("flash full")
        saved.append(mark)

    signer = sf.FrameSigner(KEY)
    verifier = sf.FrameVerifier({0: KEY}, persist=persist, reserve=10)
    first = signer.frame(b"first")
    try:
        verifier.open(first)
    except OSError:
        pass
    assert verifier.last == {} and verifier.counts["accepted"] == 0 and verifier.saved_mark == 0
    failing[0] = False
    accepted = [signer.frame(b"%d" % k) for k in range(3)]
    for frame in accepted:
        assert verifier.open(frame) is not None
    assert saved and saved[-1] >= 4                            # the mark covers every accepted counter
    rebooted = sf.FrameVerifier({0: KEY}, floor=saved[-1], reserve=10)
    assert all(rebooted.open(frame) is None for frame in [first] + accepted)
