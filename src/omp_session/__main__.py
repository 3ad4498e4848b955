"""``python -m omp_session`` runs the command line."""

from .cli import main

main()
