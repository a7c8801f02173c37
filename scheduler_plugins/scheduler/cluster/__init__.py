"""Cluster state the scheduler works on (nodes, NodeMetrics, pods) and the sources that fill it."""
