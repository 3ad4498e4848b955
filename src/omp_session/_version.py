"""The package version (read by ``omp-session --version`` without importing the library)."""

__version__ = "0.1.0"
