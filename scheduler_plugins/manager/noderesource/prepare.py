"""Quantity texts as the manager writes them (Koordinator's units): a cpu resource is a milli-core
count written as a plain integer, memory is bytes in a quantity format. The plugins' prepare steps
(`plugins/*/plugin.py`) share these.
"""

from __future__ import annotations

from policies.apis.quantity import QuantityFormat, canonical_text
from scheduler_plugins.manager.noderesource.inputs import lenient_milli


def memory_text(milli: int, fmt: QuantityFormat) -> str:
    """Memory (milli-bytes) as Kubernetes prints a quantity of that format."""
    return canonical_text(milli * 10**6, fmt)


def cpu_text(milli_cores: int) -> str:
    """batch-cpu / mid-cpu: the milli-core count as a plain integer ("25000")."""
    return str(milli_cores)


def memory_milli(text: str, milli: int) -> int:
    """What `text`, formatted from `milli` (whole bytes), says in thousandths: `milli` itself, but for
    an exponent form (a huge amount), which is parsed back as the update rule would."""
    return lenient_milli(text) if "e" in text else milli
