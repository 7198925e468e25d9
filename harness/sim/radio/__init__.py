"""Simulated radios. ``uwb_channel``: DW1000-style UWB channel for N nodes."""
