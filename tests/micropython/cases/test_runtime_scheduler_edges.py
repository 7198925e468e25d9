"""Rate groups on a Node (pure; CPython and MicroPython): a long stall, equal deadlines."""
from onboard.runtime.node import Node
from test_runtime_scheduler import SteppingClock


def test_a_long_stall_skips_the_ticks_it_covers_and_keeps_the_grid():
    clock = SteppingClock()
    fast, slow = [], []

    def stall(t):
        fast.append(t)
        if len(fast) == 2:
            clock.t_us += 1000000 + 3000        # one run takes 1 s and 3 ms

    node = Node()
    node.every("fast", 100, stall)
    node.every("slow", 10, slow.append)
    node.run(clock, 1200000)
    rep = node.report()["scheduler"]
    assert fast[:3] == [0, 10000, 1013000]    # the late tick runs once, at once
    assert fast[3:5] == [1020000, 1030000]     # then back on the 10 ms grid, no drift
    assert rep["overruns"] == 1 and rep["skipped_ticks"] == 99    # ticks 2..100; tick 101 runs late
    assert slow == [0, 1100000]                # the slow group's ticks in the stall are skipped, not caught up
    assert node.scheduler.tick_index == 120


def test_groups_due_at_the_same_tick_run_io_first_then_in_declared_order_with_the_same_time():
    order = []
    node = Node()
    node.every("a", 100, lambda t: order.append(("a", t)))
    node.every("b", 50, lambda t: order.append(("b", t)))
    node.every("io", 100, lambda t: order.append(("io", t)), io=True)
    node.every("c", 100, lambda t: order.append(("c", t)))
    node.run(SteppingClock(), 20000)
    assert order == [("io", 0), ("a", 0), ("b", 0), ("c", 0), ("io", 10000), ("a", 10000), ("c", 10000)]
