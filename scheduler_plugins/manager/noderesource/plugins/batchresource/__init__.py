"""Koordinator's `batchresource` plugin: batch-cpu and batch-memory, node-level and per NUMA zone."""
