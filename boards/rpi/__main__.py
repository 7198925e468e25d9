import sys

from boards.rpi.service import main

sys.exit(main())
