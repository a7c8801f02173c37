"""The two error families of the scheduler side.

* `ConfigError` — a configuration or plugin-args document is wrong; the message starts with the
  field path (`profiles[0].pluginConfig[1].args.usageThresholds.cpu: must be in [0, 100]`).
* `SnapshotError` — a cluster snapshot cannot be read (unparsable file, object without a name).

Scheduling outcomes are never exceptions: they are `Status` values.
"""
from __future__ import annotations


class ConfigError(ValueError):
    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.detail = message


class SnapshotError(ValueError):
    pass
