"""The scheduler: Koordinator's scheduling framework, its plugins, the HTTP extender and the simulator."""
