"""Coscheduling (Koordinator's `pkg/scheduler/plugins/coscheduling/`): gang definitions in
`gang.py`, the plugin in `plugin.py`."""
