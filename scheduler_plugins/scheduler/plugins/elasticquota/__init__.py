"""ElasticQuota (Koordinator's `pkg/scheduler/plugins/elasticquota/`): the runtime quota tree, its
distribution, and quota admission."""
