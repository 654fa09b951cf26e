"""`python -m edgetts.cli ...` is `edgetts ...`."""

import sys

from edgetts.cli.main import main

sys.exit(main())
