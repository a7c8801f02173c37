"""DeviceShare (spec §7): whole and shared GPUs from the node's Device object."""
