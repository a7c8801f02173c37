"""`python -m colocate`."""

import sys

from colocate.main import main

sys.exit(main())
