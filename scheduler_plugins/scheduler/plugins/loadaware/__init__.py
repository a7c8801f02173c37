"""LoadAwareScheduling (Koordinator's `pkg/scheduler/plugins/loadaware/`): NodeMetric-based filter
and score."""
