"""LoadAwareScheduling (spec §3): NodeMetric-based filter and score."""
