"""`python -m edgetts.cli.main ...` is `edgetts ...`."""

import sys

from edgetts.cli.main import main

sys.exit(main())
