"""The two per-resource scorers the plugins share (kube-scheduler's resource allocation scorers), in
integer arithmetic as kube-scheduler's `noderesources` computes them."""

from __future__ import annotations


def least_requested(requested: int, capacity: int) -> int:
    """(capacity - requested) × 100 / capacity; 0 for no capacity or when over capacity."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * 100 // capacity


def most_requested(requested: int, capacity: int) -> int:
    """min(requested, capacity) × 100 / capacity; 0 for no capacity."""
    return 0 if capacity == 0 else min(requested, capacity) * 100 // capacity
