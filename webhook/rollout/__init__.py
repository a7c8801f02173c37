"""Rolling profiles out safely: `colocate test` (expectations per resource), the background audit of
running pods against the current profiles, and the PolicyReports it writes (docs/rollout.md)."""
