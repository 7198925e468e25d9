"""Autonomous grading under uncertainty (ag2u paper): sand world, dozer blade, expert, policy loop."""
