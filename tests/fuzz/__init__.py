"""The fuzz campaign of issue 16: mutated omp files through open, every view and every CLI read
command (docs/fuzz.md)."""
