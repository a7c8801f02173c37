"""koord-manager's slo-controller: batch and mid resources on every node, NodeSLOs and NodeMetrics
(`colocate manager run|plan`). The calculations are `scheduler_plugins.manager.noderesource`; this package reads the
cluster through the shared store, decides per round (`reconciler`) and writes (`writer`)."""
