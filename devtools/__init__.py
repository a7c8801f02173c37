"""Checks the project runs on itself (not shipped in the package)."""
