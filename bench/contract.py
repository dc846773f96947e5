"""How long ``validate_proposal`` takes as the graph grows.

Run: ``python -m bench.contract``. For N nodes (40% unknowns, three in four of them
unresolved) and 2N edges, one update with 1,000 mutations (250 each of updatedNodes, addedNodes,
addedEdges and resolvedUnknownNodeIds) is validated several times; the median is reported. The
data is seeded, so every run judges the same proposals. Timings include the schema parse.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

from beliefs.domain.contract import Verdict, validate_proposal

SIZES = (1_000, 2_000, 5_000, 10_000)
MUTATIONS = 1_000
REPEATS = 7
SEED = 57


def build_graph(size: int, rng: random.Random) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = []
    for i in range(size):
        if rng.random() < 0.4:
            status = "unresolved" if rng.random() < 0.75 else "resolved"
            nodes.append({"id": f"n{i}", "type": "unknown", "label": f"Open {i}", "status": status})
        else:
            nodes.append({"id": f"n{i}", "type": "claim", "label": f"Claim {i}", "value": i})
    edges = [
        {"source": f"n{rng.randrange(size)}", "target": f"n{rng.randrange(size)}", "type": "rel"}
        for _ in range(2 * size)
    ]
    return {"nodes": nodes, "edges": edges}


def build_update(graph: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    share = MUTATIONS // 4
    nodes = graph["nodes"]
    unresolved = [n["id"] for n in nodes if n.get("status") == "unresolved"]
    updated = [
        {"id": n["id"], "label": n["label"] + " (revised)"} for n in rng.sample(nodes, share)
    ]
    added = [
        {"id": f"new{i}", "type": "unknown", "label": f"New question {i}", "status": "unresolved"}
        for i in range(share)
    ]
    edges = [
        {"source": f"new{i}", "target": rng.choice(nodes)["id"], "type": "qualifies"}
        for i in range(share)
    ]
    return {
        "answerMeaning": {
            "userSupportedMeaning": "the user's answer",
            "structuralActionRequired": True,
        },
        "updatedNodes": updated,
        "addedNodes": added,
        "addedEdges": edges,
        "resolvedUnknownNodeIds": rng.sample(unresolved, share),
    }


def measure(size: int) -> tuple[int, int, int, Verdict, float]:
    rng = random.Random(SEED + size)
    graph = build_graph(size, rng)
    update = build_update(graph, rng)
    mutations = sum(
        len(update[key])
        for key in ("updatedNodes", "addedNodes", "addedEdges", "resolvedUnknownNodeIds")
    )
    timings = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = validate_proposal(graph, update)
        timings.append(time.perf_counter() - start)
    return size, len(graph["edges"]), mutations, result.verdict, statistics.median(timings) * 1000


def main() -> None:
    header = f"{'nodes':>7} {'edges':>7} {'mutations':>9} {'verdict':>7} {'median ms':>10}"
    print(f"{header} {'ms / 1,000 nodes':>16}")
    for size in SIZES:
        nodes, edges, mutations, verdict, ms = measure(size)
        print(
            f"{nodes:>7,} {edges:>7,} {mutations:>9,} {verdict.value:>7} {ms:>10.1f}"
            f" {ms / (nodes / 1000):>16.2f}"
        )
    print(f"median of {REPEATS} runs each; seed {SEED}")


if __name__ == "__main__":
    main()
