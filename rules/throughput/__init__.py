"""GPU4xx: training that runs slower than the hardware allows, without any sync to blame.

A step can be free of host-device syncs and still leave most of an H100 unused: fp32 matmuls where TF32 or bf16
would do, an optimizer launching a kernel per parameter, layers and losses rebuilt every step, parameters that
cost work and change nothing. These rules name the levers that source code shows.
"""
