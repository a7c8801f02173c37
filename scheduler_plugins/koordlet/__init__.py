"""koordlet's QoS manager: the node agent that enforces the QoS classes on the node's cgroups and
reports the node's usage as a NodeMetric.

Layout (each piece injected, so a round can be computed without touching the machine):

* `features` — the koordlet `--feature-gates` and their defaults; `nodeslo` — the NodeSLO parsed
  once into frozen values with Koordinator's defaults.
* `cgroups` — the cgroup layout (v1/v2, cgroupfs/systemd) and the resource executor that writes.
* `states` — the Node, its NodeSLO and its Pods; the callbacks with one-slot coalescing.
* `metrics` — the collector (/proc and cgroup files), the metric cache, the NodeMetric reporter.
* `strategies` — CPUSuppress, MemoryEvict, CPUEvict, CgroupReconcile, CPUBurst: each round is a
  pure function of the states and the metrics that *returns* cgroup writes and evictions.
* `framework` — the strategy table, extension plugins, one round; `agent` runs rounds and applies
  them; `plan` is one round over a node directory.
"""
