"""Usage from the machine: the collector (`/proc`, cgroup files), the metric cache (windows,
percentiles) and the NodeMetric reporter."""
