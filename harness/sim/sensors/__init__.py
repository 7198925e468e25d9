"""Simulated sensors producing the same sample types as the real drivers."""
