"""The edge runtime: CPU topology, pinning, NUMA, locked memory."""
