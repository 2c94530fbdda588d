"""``python -m nasplan``."""

from nasplan.cli import main

main()
