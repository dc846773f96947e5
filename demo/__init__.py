"""The demo (`manage.py demo`, which `make run` calls) and a development webhook receiver
(`manage.py webhook_listen`; the benchmark and the tests use it too).

Tooling, not product: nothing in `beliefs` or `console` imports it.
"""
