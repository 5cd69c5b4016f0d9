"""`python -m q9diff.oracle FILE`: libQnnSystem's reading of a context binary as JSON (the isolated child)."""

import sys

from q9diff.oracle.reader import main

sys.exit(main())
