"""``python -m omp_session`` runs the command line."""

from omp_session.cli import main

main()
