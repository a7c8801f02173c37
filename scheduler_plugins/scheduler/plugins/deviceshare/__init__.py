"""DeviceShare (Koordinator's `pkg/scheduler/plugins/deviceshare/`): whole and shared GPUs from the
node's Device object."""
