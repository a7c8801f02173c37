"""The descheduling framework (Koordinator's `pkg/descheduler/framework/`): extension points, the
plugin registry, the Evictor proxy with its limits, profiles and the round that runs them."""
