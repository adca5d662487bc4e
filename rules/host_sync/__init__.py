"""GPU1xx: host-device synchronisations inside training and evaluation loops.

Each of these makes the Python thread wait until the GPU has finished every kernel queued so far. Inside a loop
that is a stall per step: the GPU drains its queue, then idles while Python prepares the next step.
"""
