"""Reservation (Koordinator's `pkg/scheduler/plugins/reservation/`): the plugin in `plugin.py`, the
pod-side matching in `matching.py`."""
