"""The admission webhook: aiohttp server, handler registry, AdmissionReview codec, cluster-state sources, metrics."""
