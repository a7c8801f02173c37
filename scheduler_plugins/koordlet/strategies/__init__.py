"""The QoS strategies: each round is a pure function of a `RoundInput` returning a `StrategyResult`."""
