"""Coscheduling (spec §6): gang definitions in `gang.py`, the plugin in `plugin.py`."""
