"""Development tools of langmem-ext, kept out of the library's wheel: the
benchmarks (``langmem-ext bench``), the extraction evaluation
(``langmem-ext eval-extraction``) and a throwaway PostgreSQL for tests.

From a checkout: ``pip install -e ./dev`` (``scripts/test`` does it).
"""
