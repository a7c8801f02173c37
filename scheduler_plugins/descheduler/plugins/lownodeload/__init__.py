"""LowNodeLoad (Koordinator's `pkg/descheduler/framework/plugins/loadaware/`): relieve nodes whose
NodeMetric usage is over the high thresholds by evicting pods that fit on nodes under the low
thresholds."""
