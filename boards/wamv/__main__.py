import sys

from boards.wamv.service import main

sys.exit(main())
