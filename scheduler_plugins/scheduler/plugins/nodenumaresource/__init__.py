"""NodeNUMAResource (Koordinator's `pkg/scheduler/plugins/nodenumaresource/`): CPU binding
(FullPCPUs, SpreadByPCPUs) and NUMA topology policies."""
