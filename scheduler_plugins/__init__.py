"""The components that enforce the QoS classes the webhook assigns, side by side on the shared core.

* `scheduler_plugins.scheduler` — koord-scheduler's framework and plugins, the kube-scheduler HTTP
  extender and the offline simulator.
* `scheduler_plugins.koordlet` — the node agent: koordlet's QoS manager on cgroups and the
  NodeMetric reporter.
* `scheduler_plugins.descheduler` — koord-descheduler's framework, LowNodeLoad and the migration
  controller.
* `scheduler_plugins.manager` — koord-manager's slo-controller: each node's batch and mid resources,
  its NodeSLO and its NodeMetric's collect policy (its calculations in `noderesource/`).

What the components share sits beside them (`clock.py`, `plugin_table.py`). Each component reads
the cluster through the neutral `colocate.cluster` package and decides with the pure `policies` core; no
component imports another (see docs/architecture.md).
"""
