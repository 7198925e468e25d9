"""Simulated vehicles (ground truth physics)."""
