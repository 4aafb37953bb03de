"""Benchmarks users can rerun: ``langmem-ext bench locomo`` and ``langmem-ext bench store``."""
