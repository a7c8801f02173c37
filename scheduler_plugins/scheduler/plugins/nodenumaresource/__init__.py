"""NodeNUMAResource (spec §4): CPU binding (FullPCPUs, SpreadByPCPUs) and NUMA topology policies."""
