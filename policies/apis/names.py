"""Object names as the API server checks them (`k8s.io/apimachinery/pkg/util/validation`): one check
for every object read from files, which never met an API server.

A name the API server would refuse cannot be in a real cluster, so a snapshot holding one is wrong,
and it must not reach what we render: a node named `x</script><script>...` is refused here, before
whatif's report embeds it. Most kinds' `metadata.name` is a DNS-1123 subdomain (`IsDNS1123Subdomain`,
as for Pods, Nodes and custom resources: `NameIsDNSSubdomain`); a Namespace's is a DNS-1123 label
(`ValidateNamespaceName`), as is every `metadata.namespace`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from policies.apis.field_errors import FieldError, invalid

DNS1123_LABEL_MAX: Final = 63
DNS1123_SUBDOMAIN_MAX: Final = 253
_LABEL: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN: Final = _LABEL + r"(\." + _LABEL + ")*"
DNS1123_LABEL_RE: Final = re.compile(f"^{_LABEL}$")
DNS1123_SUBDOMAIN_RE: Final = re.compile(f"^{_SUBDOMAIN}$")
#: the kinds whose name is a DNS-1123 label rather than a subdomain
LABEL_NAMED_KINDS: Final = frozenset({"Namespace"})


def dns1123_subdomain_error(value: str) -> str | None:
    """Why `value` is not a DNS-1123 subdomain (Kubernetes' wording), or None."""
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        return f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters"
    if not DNS1123_SUBDOMAIN_RE.match(value):
        return (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
            "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
            f"validation is '{_SUBDOMAIN}')"
        )
    return None


def dns1123_label_error(value: str) -> str | None:
    """Why `value` is not a DNS-1123 label (Kubernetes' wording), or None."""
    if len(value) > DNS1123_LABEL_MAX:
        return f"must be no more than {DNS1123_LABEL_MAX} characters"
    if not DNS1123_LABEL_RE.match(value):
        return (
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
            f"start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
            f"validation is '{_LABEL}')"
        )
    return None


def object_name_errors(kind: str, metadata: Mapping[str, Any]) -> list[FieldError]:
    """What the API server would say of the object's `metadata.name` and `metadata.namespace`."""
    errors = []
    name = metadata.get("name")
    check = dns1123_label_error if kind in LABEL_NAMED_KINDS else dns1123_subdomain_error
    if isinstance(name, str) and (why := check(name)):
        errors.append(invalid("metadata.name", name, why))
    namespace = metadata.get("namespace")
    if isinstance(namespace, str) and namespace and (why := dns1123_label_error(namespace)):
        errors.append(invalid("metadata.namespace", namespace, why))
    return errors
