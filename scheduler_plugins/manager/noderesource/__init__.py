"""The slo-controller's calculations (Koordinator's `pkg/slo-controller/noderesource`, `nodeslo`,
`nodemetric`): batch and mid resources of a node, the NUMA-zone split, degrade, the update rule,
NodeSLO rendering and the NodeMetric collect policy.

Pure functions over plain inputs (`inputs.NodeInput`, `inputs.MetricInput`, typed strategies from
`policies/apis/slo_config`), so the controller, `manager plan` and a time-stepped simulation share them.
Amounts are `(cpu milli-cores, memory milli-bytes)` integer pairs (`inputs.Res`): milli precision is
what Koordinator's zone division rounds at, and integers keep the arithmetic exact and fast.
"""
