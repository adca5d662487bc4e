"""GPU4xx: throughput left on the table by the way the step is set up (data path, kernels chosen, copies).

Not a sync and not a leak: code that runs correctly and keeps the GPU busy, but feeds it or configures it so
that each step takes longer than it must.
"""
