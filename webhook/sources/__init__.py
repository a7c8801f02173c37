"""Where the cluster state comes from. Every source publishes `ClusterSnapshot`s to a `StateHolder`."""
