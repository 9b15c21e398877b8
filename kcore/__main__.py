"""`python -m kcore`: the `kcore` command."""
import sys

from kcore.cli.main import main

sys.exit(main())
