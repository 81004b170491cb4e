"""python -m qkgen: the qkgen command."""

import sys

from .cli import main

sys.exit(main())
