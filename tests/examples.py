"""How many examples a property test draws.

The numbers written in the tests are what a developer's `make test` draws, sized so that the
suite stays quick; CI sets HYPOTHESIS_SCALE (see .ci/run) to draw several times as many.
A failing example is kept in .hypothesis/ and tried first on the next run either way.
"""

from __future__ import annotations

import os

SCALE = float(os.environ.get("HYPOTHESIS_SCALE", "1"))


def examples(count: int) -> int:
    """`count` examples, scaled by HYPOTHESIS_SCALE (never fewer than 5)."""
    return max(5, round(count * SCALE))
