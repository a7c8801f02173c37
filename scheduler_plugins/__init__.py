"""The components that enforce the QoS classes the webhook assigns, side by side on the shared core.

* `scheduler_plugins.scheduler` — koord-scheduler's framework and plugins, the kube-scheduler HTTP
  extender and the offline simulator.

The node agent (koordlet) and the descheduler take their places beside it as
`scheduler_plugins.koordlet` and `scheduler_plugins.descheduler`. Each component reads the cluster
through the neutral `cluster` package and decides with the pure `policies` core; no component
imports another (see docs/architecture.md).
"""
