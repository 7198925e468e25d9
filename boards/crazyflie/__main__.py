"""``python -m boards.crazyflie member ...``: see boards/crazyflie/cli.py (``--help``)."""
import sys

from boards.crazyflie.cli import main

sys.exit(main())
