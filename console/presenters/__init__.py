"""Presenters: what a page shows, worked out once in Python so templates only place it.

Templates test plain flags (`card.is_assumption`, `card.can_answer`) and print plain words; the
words for routes, risks and sources that a person reads live here, next to the facts they come
from.
"""
