"""gpulint's rules, one module per family. Importing this package registers every rule."""

from gpulint.rules import syntax_error  # noqa: F401  (registers GPU001, reported by the runner)
from gpulint.rules import host_sync  # noqa: F401  (registers GPU1xx)
from gpulint.rules import transfers  # noqa: F401  (registers GPU2xx)
from gpulint.rules import accumulation  # noqa: F401  (registers GPU3xx)
