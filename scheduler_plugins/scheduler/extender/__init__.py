"""kube-scheduler HTTP extender (`k8s.io/kube-scheduler/extender/v1`): the plugin pipeline behind
filter/prioritize/bind."""
