"""gpulint: find and fix the PyTorch code that leaves the GPU idle."""

__version__ = "0.1.0"
