"""TrafficClass: label the BE pods `example.colocate.io/traffic-class: bulk` when they are created.

A mutating admission plugin on `/mutate-pod`, enabled with `--admission-plugins TrafficClass`; it
runs after the in-tree plugins, so it sees the QoS class a ClusterColocationProfile gave the pod.
A network policy controller can then shape the bulk class.
"""

from __future__ import annotations

from typing import Any

from colocate.api.webhook import CREATE, AdmissionContext, AdmissionPluginSpec, Read

NAME = "TrafficClass"
LABEL = "example.colocate.io/traffic-class"
QOS_LABEL = "koordinator.sh/qosClass"


class TrafficClass:
    name = NAME
    operations = frozenset({CREATE})
    reads: frozenset[Read] = frozenset()
    explains_itself = False

    def mutate(self, obj: dict[str, Any], ctx: AdmissionContext) -> None:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if labels.get(QOS_LABEL) == "BE" and LABEL not in labels:
            obj["metadata"]["labels"][LABEL] = "bulk"


#: what the `colocate.webhook.plugins` entry point names
SPEC = AdmissionPluginSpec(NAME, ("/mutate-pod",), TrafficClass)
