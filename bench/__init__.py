"""The benchmark of record (`make bench`, `python -m bench`): figures to compare, never a test.

Tooling, not product: nothing in `beliefs` or `console` imports it.
"""
