"""VESC motor controller protocol over UART: ``codec`` (pure framing and messages,
runs on MicroPython) and ``link`` (transport, reconnects, CAN forwarding, CPython)."""
