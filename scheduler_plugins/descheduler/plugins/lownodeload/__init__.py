"""LowNodeLoad (spec §3): relieve nodes whose NodeMetric usage is over the high thresholds by
evicting pods that fit on nodes under the low thresholds."""
