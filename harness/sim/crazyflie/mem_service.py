"""The memory port (4) of one simulated Crazyflie (crazyflie-firmware mem.c), with no memories: the
count is 0, the info-version request is answered with 1, details of any id with the id alone, and reads
and writes with ENOENT. cflib asks for the count while it connects."""
from harness.sim.crazyflie import crtp


class MemService:
    def __init__(self, stats):
        self.stats = stats

    def handle(self, channel, data, _now_us, _client):
        cmd = data[0]
        if channel == crtp.MEM_CH_INFO:
            if cmd == crtp.MEM_CMD_INFO_NBR:
                return [crtp.packet(crtp.PORT_MEM, crtp.MEM_CH_INFO, bytes((crtp.MEM_CMD_INFO_NBR, 0)))]
            if cmd == crtp.MEM_CMD_INFO_VER:
                return [crtp.packet(crtp.PORT_MEM, crtp.MEM_CH_INFO, bytes((crtp.MEM_CMD_INFO_VER, 1)))]
            if cmd == crtp.MEM_CMD_INFO_DETAILS:
                return [crtp.packet(crtp.PORT_MEM, crtp.MEM_CH_INFO, data[:2])]
        if channel in (crtp.MEM_CH_READ, crtp.MEM_CH_WRITE) and len(data) >= 5:
            # [mem id, addr(4), status]: no memory with that id
            return [crtp.packet(crtp.PORT_MEM, channel, data[:5] + bytes((crtp.ENOENT,)))]
        self.stats["unknown"] += 1
        return []
