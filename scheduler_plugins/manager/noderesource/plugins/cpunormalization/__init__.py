"""Koordinator's `cpunormalization` plugin: the node's CPU normalization ratio annotation."""
