"""GPU4xx: throughput left on the table by the way the step is set up (data path, kernels chosen, copies,
training what was meant to be frozen).

Not a sync and not a leak: code that runs, but feeds or configures the GPU so that each step takes longer (or
does more work) than it must.
"""
