"""GPU3xx: values accumulated across the iterations of a training loop.

Summing a loss the wrong way either keeps every step's autograd graph alive (memory grows until the job dies)
or pulls every step's value to the host (a sync per step). The right way keeps a detached sum on the device and
reads it when the program prints or returns it.
"""
