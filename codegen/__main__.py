"""python -m qkgen: the qkgen command."""

import sys

from .tools.cli import main

sys.exit(main())
