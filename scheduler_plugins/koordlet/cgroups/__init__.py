"""The node's cgroups: where a QoS class, a pod or a container lives (`layout`), which file holds a
resource in each cgroup version (`resources`), and the executor that writes them (`executor`)."""
