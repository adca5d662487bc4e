"""Settings from `[tool.gpulint]` in pyproject.toml (or gpulint.toml / .gpulint.toml), overridden by the CLI."""

from __future__ import annotations

import fnmatch
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class ConfigError(Exception):
    """A problem in the user's configuration or flags: one line, exit code 2."""


DEFAULT_EXCLUDE = (".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", ".eggs", "__pycache__", "build",
                   "dist", "node_modules", "site-packages", ".mypy_cache", ".pytest_cache", ".ruff_cache",
                   ".gpulint_cache", ".ipynb_checkpoints")

_KEYS = {"select", "extend-select", "ignore", "per-file-ignores", "exclude", "extend-exclude", "report-periodic",
         "respect-gitignore", "cache-dir", "include-notebooks", "max-file-size", "unused-noqa"}

# Above this, a file is skipped with a warning (docs/benchmarks.md: a 5 MB module costs minutes of CPU).
DEFAULT_MAX_FILE_SIZE = 5_000_000


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ("GPU",)
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE  # as Ruff's: setting `exclude` replaces these; extend-exclude adds
    extend_exclude: tuple[str, ...] = ()
    report_periodic: bool = False
    respect_gitignore: bool = True
    cache_dir: str = ".gpulint_cache"
    include_notebooks: bool = True
    max_file_size: int = DEFAULT_MAX_FILE_SIZE  # bytes; 0: no limit
    unused_noqa: bool = False  # report noqa comments that suppress nothing (GPU000, Ruff's RUF100)
    root: Path = field(default_factory=Path.cwd)  # where relative patterns are anchored
    source: Optional[Path] = None  # the file the settings came from

    # -- rule selection ----------------------------------------------------------------------------------------
    def enabled_codes(self, path: Optional[Path] = None) -> frozenset[str]:
        from gpulint.rule import all_rules

        rules = all_rules()
        chosen = self.select + self.extend_select
        # Preview rules run only when a pattern names them more closely than "GPU"/"ALL" (`--select GPU4`).
        selected = {c for c, rule in rules.items() if _matches(c, chosen) and
                    (not rule.preview or _matches(c, [p for p in chosen if p not in ("GPU", "ALL")]))}
        selected -= {c for c in selected if _matches(c, self.ignore)}
        if path is not None and self.per_file_ignores:
            rel = self.relative(path)
            for pattern, ignored in self.per_file_ignores:
                if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(path.name, pattern):
                    selected -= {c for c in selected if _matches(c, ignored)}
        return frozenset(selected)

    def relative(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return path.as_posix()

    def fingerprint(self) -> str:
        """What changes lint results: part of the cache key."""
        return repr((self.select, self.extend_select, self.ignore, self.per_file_ignores, self.report_periodic))


def _matches(code: str, patterns: Iterable[str]) -> bool:
    return any(p == "ALL" or code.startswith(p) for p in patterns)


def validate_codes(patterns: Iterable[str], where: str) -> tuple[str, ...]:
    from gpulint.rule import all_rules

    codes = set(all_rules())
    out = []
    for raw in patterns:
        p = raw.strip().upper()
        if not p:
            continue
        if p != "ALL" and not any(c.startswith(p) for c in codes):
            from gpulint.codes import did_you_mean

            raise ConfigError(f"{where}: unknown rule code or prefix {raw!r}{did_you_mean(raw)} "
                              f"(see `gpulint rule --all`)")
        out.append(p)
    return tuple(out)


def find_config(start: Path) -> Optional[Path]:
    """The nearest gpulint.toml, .gpulint.toml, or pyproject.toml with a [tool.gpulint] table."""
    start = start.resolve()
    for directory in [start, *start.parents] if start.is_dir() else [start.parent, *start.parent.parents]:
        for name in ("gpulint.toml", ".gpulint.toml"):
            if (directory / name).is_file():
                return directory / name
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file():
            try:
                data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
            except tomllib.TOMLDecodeError as exc:
                # Like Ruff: a broken pyproject.toml stops the run instead of silently linting with defaults.
                raise ConfigError(toml_error(pyproject, exc)) from None
            if "gpulint" in data.get("tool", {}):
                return pyproject
    return None


_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def toml_error(path: Path, exc: Exception) -> str:
    """`pyproject.toml:3:7: invalid TOML: <reason>`: file, line, column and reason on one line."""
    text = str(exc)
    line, column = getattr(exc, "lineno", None), getattr(exc, "colno", None)
    match = _AT.search(text)
    if match:
        text = text[:match.start()]
        line, column = line or int(match.group(1)), column or int(match.group(2))
    try:
        path = path.resolve().relative_to(Path.cwd().resolve())
    except (OSError, ValueError):
        pass
    where = f"{path}:{line}:{column}" if line else f"{path}"
    reason = text.strip() or "invalid TOML"
    return f"{where}: invalid TOML: {reason[0].lower()}{reason[1:]}"


def load(path: Optional[Path], cwd: Optional[Path] = None) -> Settings:
    cwd = cwd or Path.cwd()
    if path is None:
        return Settings(root=cwd)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(toml_error(path, exc)) from None
    table = data.get("tool", {}).get("gpulint", {}) if path.name == "pyproject.toml" else data
    return from_table(table, path)


def from_table(table: dict[str, Any], path: Path) -> Settings:
    where = f"{path}"
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown option {unknown[0]!r} in [tool.gpulint] "
                          f"(known: {', '.join(sorted(_KEYS))})")
    kwargs: dict[str, Any] = {"root": path.parent.resolve(), "source": path}
    for key in ("select", "extend-select", "ignore"):
        if key in table:
            kwargs[key.replace("-", "_")] = validate_codes(_str_list(table[key], where, key), f"{where}: {key}")
    for key in ("exclude", "extend-exclude"):
        if key in table:
            kwargs[key.replace("-", "_")] = tuple(_str_list(table[key], where, key))
    if "per-file-ignores" in table:
        pfi = table["per-file-ignores"]
        if not isinstance(pfi, dict):
            raise ConfigError(f"{where}: per-file-ignores must be a table of glob = [codes]")
        kwargs["per_file_ignores"] = tuple(
            (glob, validate_codes(_str_list(codes, where, f"per-file-ignores.{glob}"), f"{where}: {glob}"))
            for glob, codes in pfi.items())
    for key in ("report-periodic", "respect-gitignore", "include-notebooks", "unused-noqa"):
        if key in table:
            if not isinstance(table[key], bool):
                raise ConfigError(f"{where}: {key} must be true or false")
            kwargs[key.replace("-", "_")] = table[key]
    if "cache-dir" in table:
        if not isinstance(table["cache-dir"], str):
            raise ConfigError(f"{where}: cache-dir must be a string")
        kwargs["cache_dir"] = table["cache-dir"]
    if "max-file-size" in table:
        kwargs["max_file_size"] = parse_size(table["max-file-size"], f"{where}: max-file-size")
    return Settings(**kwargs)


_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
          "kib": 2**10, "mib": 2**20, "gib": 2**30}


def parse_size(value: Any, where: str) -> int:
    """Bytes from `5000000`, `"5MB"`, `"500 kB"` or `"2MiB"`; 0 means no limit."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str):
        number = value.strip().rstrip("BbIiKkMmGg ")
        unit = value.strip()[len(number):].strip().lower()
        try:
            amount = float(number)
        except ValueError:
            amount = -1.0
        if amount >= 0 and unit in _UNITS:
            return int(amount * _UNITS[unit])
    raise ConfigError(f"{where}: expected a size such as 5MB, 500kB or a number of bytes (0: no limit), "
                      f"got {value!r}")


def _str_list(value: Any, where: str, key: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key} must be a list of strings")
    return value


def override(settings: Settings, **flags: Any) -> Settings:
    """Apply command-line flags (None means: not given)."""
    changes = {}
    for key in ("select", "extend_select", "ignore"):
        value = flags.get(key)
        if value:
            codes = validate_codes([c for v in value for c in v.split(",")], f"--{key.replace('_', '-')}")
            changes[key] = codes if key != "extend_select" else settings.extend_select + codes
    if flags.get("max_file_size") is not None:
        changes["max_file_size"] = parse_size(flags["max_file_size"], "--max-file-size")
    if flags.get("extend_exclude"):
        changes["extend_exclude"] = settings.extend_exclude + tuple(flags["extend_exclude"])
    if flags.get("report_periodic") is not None:
        changes["report_periodic"] = flags["report_periodic"]
    return replace(settings, **changes) if changes else settings
