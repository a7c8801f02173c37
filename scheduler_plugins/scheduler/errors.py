"""The scheduler's error families.

* `policies.apis.field_errors.ConfigError` — a configuration or plugin-args document is wrong; the
  message starts with the field path (`profiles[0].pluginConfig[1].args.usageThresholds.cpu: must
  be in [0, 100]`). It is the one field-error mechanism of the code base, shared with the webhook.
* `SnapshotError` — a cluster snapshot cannot be read (unparsable file, object without a name).

Scheduling outcomes are never exceptions: they are `Status` values.
"""

from __future__ import annotations


class SnapshotError(ValueError):
    pass
