"""Koordinator's `midresource` plugin: mid-cpu and mid-memory from prod's reclaimable resources."""
