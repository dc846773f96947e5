"""What the server processes count as they serve, for /metrics (console.metrics): one place, so
the services that observe a value and the view that reports it name the same metric."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

REQUESTS = Counter(
    "console_http_requests",
    "HTTP requests answered, by view and status",
    ["view", "method", "status"],
)
ANSWER_SECONDS = Histogram(
    "console_prompt_answer_seconds",
    "Time from a blocking prompt to the person's answer",
    buckets=(5, 15, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600),
)
WAITERS = Gauge(
    "console_waiters",
    "Long-polls and live pages waiting for a change, held by the server processes",
    multiprocess_mode="livesum",
)
