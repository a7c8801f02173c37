"""Reservation (spec §5): the plugin in `plugin.py`, the pod-side matching in `matching.py`."""
