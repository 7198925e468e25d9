"""Transports move bytes; protocols turn bytes into messages. Kept apart (DESIGN.md)."""
