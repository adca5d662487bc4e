"""GPU2xx: host-to-device transfers that cost more than they must.

A training step's input has to cross PCIe. From pageable memory that copy is staged and blocks the Python
thread; from pinned memory it runs asynchronously beside compute. Tensors that could be born on the device
should not cross at all.
"""
