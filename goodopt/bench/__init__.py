"""Benchmarks run by ``make bench`` (``python -m goodopt.bench``)."""
