"""Admission plugins (`colocate.webhook.plugins`).

An `AdmissionPluginSpec` names the routes the plugin joins (`/mutate-pod`, `/validate-node`, ...)
and builds a `MutatingPlugin` (it changes its private copy of the object in place) or a
`ValidatingPlugin` (it raises `Denied`). `--admission-plugins A,B` (on `serve`, `apply`, `test`,
`audit` and `whatif`) enables them, after each route's in-tree plugins, in that order. A plugin
that raises: the route's failure policy decides (Fail: the request is denied; Ignore: the plugin
is skipped, its changes dropped).
"""

from policies.admission.plugin import (
    CREATE,
    DELETE,
    UPDATE,
    AdmissionContext,
    AdmissionRequest,
    Denied,
    MutatingPlugin,
    Read,
    ValidatingPlugin,
)
from webhook.plugins import AdmissionPluginSpec

__all__ = [
    "CREATE",
    "DELETE",
    "UPDATE",
    "AdmissionContext",
    "AdmissionPluginSpec",
    "AdmissionRequest",
    "Denied",
    "MutatingPlugin",
    "Read",
    "ValidatingPlugin",
]
