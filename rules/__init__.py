"""gpulint's rules, one module per family. Importing this package registers every rule."""

from gpulint.rules import host_sync  # noqa: F401  (registers GPU1xx)
