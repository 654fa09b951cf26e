"""Accelerators behind a voice: the RK3588-family NPU runs a streamed voice's flow and decoder windows
(issue 41, docs/npu.md).  A lower layer: nothing here knows the daemon or the config."""
