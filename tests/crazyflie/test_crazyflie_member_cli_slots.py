"""The member command's choice of ranging slots from a board config's range_peer_ids."""
from boards.crazyflie.cli import member_slots


def test_the_member_cli_ranges_only_the_slots_the_firmware_logs():
    """A board config's range_peer_ids may list more than 8 peers: slots 8 and up have no
    ranging.distance<j> log variable (the driver's poll reads 0..7), so the member logs none of them."""
    assert member_slots(list(range(10)), 0, []) == [1, 2, 3, 4, 5, 6, 7]
    assert member_slots(list(range(10)), 3, [1, 9]) == [1]
    assert member_slots([5, 4], 4, []) == [0]
