"""Kubernetes' and Koordinator's API as plain data: the vocabulary every component reads and
writes (keys, kinds, quantities, a pod's requests, manifests, selectors, the slo-controller-config
documents). Pure: no I/O."""
