"""The slo-controller-config ConfigMap's strategy documents (`apis/configuration`), parsed and
checked: read by the manager, the koordlet and `/validate-configmap`."""
