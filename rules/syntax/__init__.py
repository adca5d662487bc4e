"""GPU001: the file could not be parsed (a pseudo-rule the runner reports)."""
