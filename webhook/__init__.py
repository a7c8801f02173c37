"""The admission webhook: HTTPS server, handler registry, AdmissionReview codec, cluster-state sources, metrics."""
