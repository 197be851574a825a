"""``python -m privlab.cli``."""

from privlab.cli import main

main()
