"""The manager's node resource plugins, one folder each (Koordinator's
`pkg/slo-controller/noderesource/plugins/<name>/`); `plugins_profile.py` lists them in order."""
