"""kube-scheduler HTTP extender (spec §12): the plugin pipeline behind filter/prioritize/bind."""
