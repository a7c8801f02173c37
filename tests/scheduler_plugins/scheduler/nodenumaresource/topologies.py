"""NodeResourceTopology builders: Koordinator's cpu-topology annotation for an N-socket machine."""

from __future__ import annotations

import json
from typing import Any


def cpu_detail(sockets: int = 2, cores: int = 4, threads: int = 2) -> list[dict[str, int]]:
    """Linux numbering: CPU `t × (sockets × cores) + global core`, one NUMA node per socket."""
    per_thread = sockets * cores
    return [
        {"id": t * per_thread + s * cores + c, "core": s * cores + c, "socket": s, "node": s}
        for t in range(threads)
        for s in range(sockets)
        for c in range(cores)
    ]


def make_nrt(
    node: str, sockets: int = 2, cores: int = 4, threads: int = 2, memory_per_numa: str | None = None
) -> dict[str, Any]:
    nrt: dict[str, Any] = {
        "apiVersion": "topology.node.k8s.io/v1alpha1",
        "kind": "NodeResourceTopology",
        "metadata": {
            "name": node,
            "annotations": {
                "node.koordinator.sh/cpu-topology": json.dumps({"detail": cpu_detail(sockets, cores, threads)})
            },
        },
        "topologyPolicies": ["None"],
    }
    if memory_per_numa is not None:
        nrt["zones"] = [
            {
                "name": f"node-{s}",
                "type": "Node",
                "resources": [{"name": "memory", "capacity": memory_per_numa, "allocatable": memory_per_numa}],
            }
            for s in range(sockets)
        ]
    return nrt
