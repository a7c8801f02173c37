"""Koordinator's `resourceamplification` plugin: the node's resource amplification ratio annotation."""
