"""The descheduling framework (spec §1): extension points, the plugin registry, the Evictor proxy
with its limits, profiles and the round that runs them."""
