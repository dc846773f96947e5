"""/metrics under `make serve`'s server: what each process counted is summed over them."""

from __future__ import annotations

import subprocess
import sys

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.support.servers import (
    ROOT,
    free_port,
    production_env,
    static_files_collected,
    wait_until_up,
)

pytestmark = pytest.mark.servers


def _healthz_requests(base: str) -> float:
    text = requests.get(f"{base}/metrics", timeout=30).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "console_http_requests_total" and sample.labels == {
                "view": "healthz",
                "method": "GET",
                "status": "200",
            }:
                return sample.value
    return 0.0


@pytest.mark.django_db(transaction=True)
def test_two_processes_counts_are_summed_in_one_scrape() -> None:
    port = free_port()
    env = production_env()
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    with static_files_collected(env):
        server = subprocess.Popen(
            [sys.executable, "-m", "console.serve", "--port", str(port), "--workers", "2",
             "--log-level", "warning"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until_up(base, process=server)
            before = _healthz_requests(base)
            for _ in range(40):  # new connections: the kernel spreads them over both processes
                with requests.Session() as fresh:
                    fresh.get(f"{base}/healthz", timeout=30)
            # Every scrape, whichever process answers it, sums both processes' counts (each
            # process alone counted about half).
            for _ in range(6):
                assert _healthz_requests(base) == before + 40
        finally:
            server.terminate()
            server.communicate(timeout=60)
