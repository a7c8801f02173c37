"""ElasticQuota (spec §8): the runtime quota tree, its distribution, and quota admission."""
