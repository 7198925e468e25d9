"""Controllers: PID, differential-drive mapping, way-point following (pure Python)."""
