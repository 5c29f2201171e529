"""``python -m mytriton.aot``: the ``mytriton-build`` command, for machines without the console script."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
