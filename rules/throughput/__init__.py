"""GPU4xx: mistakes that make the GPU do more work than the program asks for (training what was meant to be
frozen, ...)."""
