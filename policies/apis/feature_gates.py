"""Feature gates and their `--feature-gates` parser, for every component that has gates.

Each component keeps its own table of gate names and defaults next to its code (the scheduler's in
`scheduler_plugins/scheduler/framework/features.py`, the koordlet's in
`scheduler_plugins/koordlet/features.py`, as Koordinator keeps `pkg/features/features.go` and
`koordlet_features.go`); the text of the flag and the gates in effect are read here, once.

The flag is read as Kubernetes' component-base reads it (`k8s.io/component-base/featuregate`,
`featureGate.Set`): `Name=value` items separated by commas, spaces around items and around the
name and value ignored, the value read by Go's `strconv.ParseBool`, which accepts exactly
`1 t T TRUE true True` and `0 f F FALSE false False`. An unknown name, a missing value or any
other value is a usage error worded as component-base words it, naming the flag.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from policies.apis.field_errors import ConfigError

#: what Go's `strconv.ParseBool` reads as true and as false; nothing else is a bool
TRUE_SPELLINGS: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
FALSE_SPELLINGS: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def parse_bool(text: str) -> bool | None:
    """`text` as Go's `strconv.ParseBool` reads it; None when it is not a bool."""
    if text in TRUE_SPELLINGS:
        return True
    if text in FALSE_SPELLINGS:
        return False
    return None


def parse_gate_map(text: str | None, known: Mapping[str, bool], flag: str) -> dict[str, bool]:
    """`A=true,B=false` over the `known` gate names: the overrides only (empty text: none)."""
    overrides: dict[str, bool] = {}
    for term in filter(None, (t.strip() for t in (text or "").split(","))):
        name, sep, raw = term.partition("=")
        name, raw = name.strip(), raw.strip()
        if not sep:
            raise ConfigError(flag, f"missing bool value for {name}")
        if name not in known:
            raise ConfigError(flag, f"unrecognized feature gate: {name} (known: {', '.join(sorted(known))})")
        value = parse_bool(raw)
        if value is None:
            raise ConfigError(
                flag, f'invalid value of {name}={raw}, err: strconv.ParseBool: parsing "{raw}": invalid syntax'
            )
        overrides[name] = value
    return overrides


@dataclass(frozen=True)
class FeatureGates:
    """The gates in effect: a component's `defaults` with the `--feature-gates` `overrides`.

    Asking for a gate the component does not have is a programming error (KeyError), not False:
    a misspelt gate name in the code would otherwise read as a gate that is off.
    """

    defaults: Mapping[str, bool]
    overrides: Mapping[str, bool] = field(default_factory=dict)
    #: the gates in effect, merged once: a component asks for its gates every round (the koordlet
    #: about ten times per node per round), and both parts are fixed when the gates are made
    _effective: dict[str, bool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        effective = dict(self.defaults)
        effective.update((name, on) for name, on in self.overrides.items() if name in effective)
        object.__setattr__(self, "_effective", effective)

    def enabled(self, name: str) -> bool:
        try:
            return self._effective[name]
        except KeyError:
            raise KeyError(f"no feature gate {name!r} (known: {', '.join(sorted(self.defaults))})") from None

    def any_enabled(self, *names: str) -> bool:
        for name in names:
            if self.enabled(name):
                return True
        return False


def parse_feature_gates(text: str | None, known: Mapping[str, bool], flag: str = "--feature-gates") -> FeatureGates:
    """The gates `text` (the flag's value) sets over the `known` defaults; ConfigError naming `flag`."""
    return FeatureGates(known, MappingProxyType(parse_gate_map(text, known, flag)))
