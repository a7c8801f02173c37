"""`colocate whatif`: every component stepped over time on one in-memory store (docs/whatif.md).

`workload` parses the workload file, `inputs` the snapshot and profiles, `components` wires the
live components over the store, `usage` samples usage into NodeMetrics, `loop` runs the steps,
`summary` and `report` turn the steps into the JSON/table document and the HTML page, `cli` is the edge.
"""
