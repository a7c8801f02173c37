"""Offline scheduling: the scheduling loop, `simulate` and `explain`."""
