"""The command line: `gpulint check`, `gpulint rule`, and the subcommands other modules add."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Optional

import click

from gpulint import __version__
from gpulint.config import ConfigError, Settings, find_config, load, override
from gpulint.discovery import PathError, iter_files
from gpulint.diagnostics import FixMode
from gpulint.output import FORMATS
from gpulint.output.report import Report
from gpulint.pipeline import FileOutcome
from gpulint.check_extras import Extras, run_add_noqa
from gpulint import noqa_check
from gpulint.noqa_check import UNUSED_NOQA

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _fail(message: str) -> "click.exceptions.Exit":
    from gpulint.output.common import printable

    click.echo(f"gpulint: error: {printable(message)}", err=True)
    return click.exceptions.Exit(EXIT_ERROR)


def resolve_settings(config: Optional[str], paths: list[Path]) -> Settings:
    if config is not None:
        return load(Path(config))
    start = paths[0] if paths and str(paths[0]) != "-" and paths[0].exists() else Path.cwd()
    return load(find_config(start))


def _quiet_broken_pipe() -> None:
    """The reader went away (`gpulint rule --all | head -1`): stop quietly, as `cat` does, with no traceback
    and no "Exception ignored" when Python flushes stdout at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    raise click.exceptions.Exit(EXIT_CLEAN)


class _Main(click.Group):
    """`gpulint [OPTIONS] [PATHS]` is `gpulint check [OPTIONS] [PATHS]` (and `gpulint` alone checks the current
    directory); a subcommand wins over a path of the same name. Whatever escapes the per-file handling is one
    line and exit 2, never a traceback."""

    # Subcommands imported only when named (or listed): `gpulint verify` and its dependencies cost every lint's
    # start-up otherwise, a third of a cached run.
    _LAZY = {"verify": ("gpulint.verify.cli", "verify")}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self._LAZY})

    def get_command(self, ctx: click.Context, name: str):
        if name not in self.commands and name in self._LAZY:
            import importlib

            module, attribute = self._LAZY[name]
            self.add_command(getattr(importlib.import_module(module), attribute))
        return super().get_command(ctx, name)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        own = {"--version", *self.context_settings.get("help_option_names", ())}
        if not args or (args[0] not in self.list_commands(ctx) and args[0] not in own):
            args = ["check", *args]
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except BrokenPipeError:
            _quiet_broken_pipe()
        except KeyboardInterrupt:
            click.echo("gpulint: interrupted", err=True)
            raise click.exceptions.Exit(130)
        except Exception as exc:
            raise _fail(f"internal error ({type(exc).__name__}: {exc}); please report it")


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gpulint")
def main() -> None:
    """Find and fix the PyTorch code that leaves your GPU idle.

    \b
    `gpulint [OPTIONS] [PATHS]` is short for `gpulint check [OPTIONS] [PATHS]`:
      gpulint                 check the current directory
      gpulint --fix src/      apply safe fixes under src/
    A subcommand wins over a path of the same name: to lint a directory named
    `rule` (or `check`, `server`, ...), write `gpulint check rule` or `gpulint ./rule`.
    """


def entry() -> None:
    """The program's entry point (the `gpulint` script, `python -m gpulint`): `main`, and then, after a batch lint,
    an exit without the interpreter's teardown (gpulint/runtime.py: freeing every parsed tree one object at a
    time is work the operating system does at once). Output is flushed first; if that fails (a closed pipe),
    the ordinary exit handles it as before. Tests call `main` and keep their process."""
    from gpulint import runtime

    runtime.ending_process()
    try:
        main()
    except SystemExit as exc:
        code = exc.code
        if runtime.quick_exit_allowed() and (code is None or isinstance(code, int)):
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except (OSError, ValueError):
                raise exc from None
            os._exit(code or 0)
        raise


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (e.g. GPU1,GPU302).")
@click.option("--extend-select", multiple=True, help="Codes or prefixes to enable on top of the configured ones.")
@click.option("--ignore", multiple=True, help="Codes or prefixes to disable.")
@click.option("--fix", "fix", is_flag=True, help="Apply safe fixes.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply unsafe fixes (with --fix), or show them.")
@click.option("--diff", is_flag=True, help="Print the diff the fixes would make; change nothing.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option("--statistics", is_flag=True, help="Count findings per rule.")
@click.option("--output-format", type=click.Choice(sorted(FORMATS)), default="full", show_default=True)
@click.option("--stdin-filename",
              help="Read the file to lint from stdin, under this name (`-` as the path reads stdin too).")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("--config", type=click.Path(dir_okay=False), help="Use this pyproject.toml or gpulint.toml.")
@click.option("--report-periodic/--no-report-periodic", default=None,
              help="Also report syncs that only run periodically (softer message).")
@click.option("--force-exclude", is_flag=True,
              help="Apply `exclude` to files named on the command line too (for pre-commit and editors).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes at most (default: one per CPU; one per 5,000 lines to lint; 1 lints in "
                   "this process).")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the results cache.")
@click.option("--max-file-size", help="Skip files larger than this (e.g. 5MB; 0: no limit).")
@click.option("--extend-exclude", multiple=True, help="Patterns to exclude on top of `exclude` (gitignore-style).")
@click.option("--fix-only", is_flag=True, help="Apply fixes (implies --fix); report no remaining findings.")
@click.option("--show-fixes", is_flag=True, help="With --fix: list the fixed findings per file and rule.")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when a fix was applied, even if none remain.")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODE` to every line with a finding; fix nothing.")
@click.option("--unused-noqa", is_flag=True,
              help=f"Report noqa comments that suppress nothing ({UNUSED_NOQA[0]} {UNUSED_NOQA[1]}, Ruff's RUF100).")
def check(paths, select, extend_select, ignore, fix, unsafe_fixes, diff, exit_zero, statistics, output_format,
          stdin_filename, quiet, config, report_periodic, force_exclude, jobs, no_cache, max_file_size, extend_exclude, fix_only,
          show_fixes, exit_non_zero_on_fix, add_noqa, unused_noqa) -> None:
    """Lint PATHS (default: the current directory). `-`, or --stdin-filename, reads stdin."""
    stdin = [str(p) for p in paths] == ["-"] or stdin_filename is not None
    if stdin_filename is not None:
        for ignored in (p for p in paths if str(p) != "-"):
            click.echo(f"gpulint: warning: ignoring {ignored} in favour of standard input (--stdin-filename)",
                       err=True)
        paths = [Path("-")]
    paths = list(paths) or [Path(".")]
    try:
        settings = resolve_settings(config, paths)
        settings = override(settings, select=select, extend_select=extend_select, ignore=ignore,
                            report_periodic=report_periodic, max_file_size=max_file_size,
                            extend_exclude=extend_exclude)
    except ConfigError as exc:
        raise _fail(str(exc))
    extras = Extras(fix_only, show_fixes, exit_non_zero_on_fix, unused_noqa or settings.unused_noqa)
    fix = fix or fix_only
    if add_noqa and (fix or diff):
        raise _fail("--add-noqa adds comments and fixes nothing: use it without --fix, --fix-only or --diff")
    mode = FixMode.NONE
    if fix or diff:
        mode = FixMode.UNSAFE if unsafe_fixes else FixMode.SAFE
    want_edits = output_format not in ("full", "concise")

    if stdin:
        _check_stdin(settings, mode, diff, stdin_filename, output_format, exit_zero, statistics, quiet,
                     want_edits)
        return
    try:
        files = list(iter_files(paths, settings, force_exclude=force_exclude))
    except PathError as exc:
        raise _fail(str(exc))

    outcomes = run_files(files, settings, mode, write=not diff, want_edits=want_edits and not add_noqa, jobs=jobs,
                         use_cache=not no_cache)
    _warn(w for o in outcomes for w in o.warnings)
    if add_noqa:
        raise click.exceptions.Exit(run_add_noqa(outcomes, quiet))
    outcomes, before = extras.prepare(outcomes, settings)
    _finish(outcomes, mode, diff, output_format, exit_zero, statistics, quiet, unsafe_fixes, extras, before)


def run_files(files, settings, mode, *, write, want_edits, jobs=None, use_cache=True) -> list[FileOutcome]:
    from gpulint.cache import Cache
    from gpulint.parallel import lint_files

    cache = Cache.for_settings(settings) if use_cache else None
    return lint_files(files, settings, mode, write=write, want_edits=want_edits, jobs=jobs, cache=cache)


def _check_stdin(settings, mode, diff, stdin_filename, output_format, exit_zero, statistics, quiet, want_edits):
    from gpulint.files import FileError
    from gpulint.pipeline import Input, lint_input

    name = stdin_filename or "-"
    try:
        source = Input.from_bytes(sys.stdin.buffer.read(), name, Path(name) if stdin_filename else None)
    except FileError as exc:
        raise _fail(str(exc))
    if source.path is None or source.path.suffix != ".ipynb":
        _warn(noqa_check.unknown_code_warnings(name, source.text))
    outcome = lint_input(source, settings, mode, write=False, want_edits=want_edits)
    _print_errors([outcome])
    if diff:
        click.echo(_unified(source.text, outcome.text, name), nl=False)
        raise click.exceptions.Exit(EXIT_FINDINGS if outcome.text != source.text else _exit_for_errors([outcome]))
    if mode is not FixMode.NONE:
        # Like Ruff: with --fix on stdin, the fixed source goes to stdout, findings to stderr.
        sys.stdout.write(outcome.text)
        sys.stdout.flush()
    text_out = _render([outcome], output_format, statistics, quiet, mode, False)
    click.echo(text_out, nl=False, err=mode is not FixMode.NONE)
    _exit([outcome], exit_zero)


def _warn(warnings) -> None:
    for warning in warnings:
        click.echo(f"gpulint: warning: {warning}", err=True)


def _unified(before: str, after: str, name: str) -> str:
    if before == after:
        return ""
    import difflib  # `--diff` only: not on every run's start-up

    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=f"a/{name}", tofile=f"b/{name}"))


def _summary(diagnostics, fixed: int, mode: FixMode, unsafe_shown: bool, unchecked: int = 0) -> str:
    total = len(diagnostics)
    safe = sum(1 for d in diagnostics if d.fix and d.fix.allowed(FixMode.SAFE) is not None)
    unsafe = sum(1 for d in diagnostics if d.fix and d.fix.applicability.value == "unsafe")
    parts = []
    if fixed:
        parts.append(f"Fixed {fixed} finding{'s' if fixed != 1 else ''}.")
    if total:
        line = f"Found {total} finding{'s' if total != 1 else ''}"
        hints = []
        if safe:
            hints.append(f"{safe} fixable with --fix")
        if unsafe:
            hints.append(f"{unsafe} with --fix --unsafe-fixes")
        parts.append(line + (f" ({'; '.join(hints)})." if hints else "."))
    elif unchecked:
        parts.append(f"No findings, but {unchecked} file{'s' if unchecked != 1 else ''} could not be checked.")
    elif not fixed:
        parts.append("All checks passed!")
    return "\n".join(parts)


def _statistics(diagnostics, unsafe_shown: bool) -> str:
    """Ruff's table: count, code, then `[*]` when --fix (with --unsafe-fixes if given) fixes every finding of
    the rule, `[~]` some, `[ ]` none (the marks only when something is fixable), and the rule's name."""
    counts = Counter((d.code, d.name) for d in diagnostics)
    fixable = Counter(d.code for d in diagnostics
                      if d.fix is not None and (unsafe_shown or d.fix.allowed(FixMode.SAFE) is not None))
    width = max((len(str(n)) for n in counts.values()), default=1)

    def mark(code: str, n: int) -> str:
        if not fixable:
            return ""
        return "[*] " if fixable[code] == n else "[~] " if fixable[code] else "[ ] "

    return "".join(f"{n:>{width}}\t{code}\t{mark(code, n)}{name}\n"
                   for (code, name), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _render(outcomes, output_format, statistics, quiet, mode, unsafe_shown) -> str:
    diagnostics = tuple(sorted((d for o in outcomes for d in o.diagnostics), key=lambda d: d.sort_key()))
    sources = {}
    for o in outcomes:
        sources.update(o.sources)
    fixed = sum(o.fixed_count for o in outcomes)
    summary = None if quiet or output_format not in ("full", "concise") else \
        _summary(diagnostics, fixed, mode, unsafe_shown, sum(1 for o in outcomes if o.errors))
    if statistics and output_format in ("full", "concise"):
        return _statistics(diagnostics, unsafe_shown) + (summary + "\n" if summary else "")
    return FORMATS[output_format](Report(diagnostics, sources, summary))


def _print_errors(outcomes) -> None:
    from gpulint.output.common import printable

    for error in (e for o in outcomes for e in o.errors):  # one line each, whatever the file is called
        click.echo(f"gpulint: error: {printable(error)}", err=True)


def _exit_for_errors(outcomes) -> int:
    return EXIT_ERROR if any(o.errors for o in outcomes) else EXIT_CLEAN


def _exit(outcomes, exit_zero: bool) -> None:
    """Exit 2 when a rule crashed or a fix could not be written (whatever was found), else 1 for findings,
    else 2 for files that could not be checked."""
    if any(o.fatal for o in outcomes):
        raise click.exceptions.Exit(EXIT_ERROR)
    if any(o.diagnostics for o in outcomes) and not exit_zero:
        raise click.exceptions.Exit(EXIT_FINDINGS)
    if any(o.errors for o in outcomes):
        raise click.exceptions.Exit(EXIT_ERROR)


def _finish(outcomes, mode, diff, output_format, exit_zero, statistics, quiet, unsafe_fixes, extras=None,
            before=None) -> None:
    _print_errors(outcomes)
    if diff:
        text = "".join(_unified(o.original, o.fixed, str(o.path)) for o in outcomes if o.fixed is not None)
        click.echo(text, nl=False)
        changed = any(o.fixed is not None for o in outcomes)
        raise click.exceptions.Exit(EXIT_FINDINGS if changed else _exit_for_errors(outcomes))
    if extras is not None and extras.fix_only:
        click.echo(extras.fixed_summary(outcomes, before, quiet), nl=False)
    else:
        click.echo(_render(outcomes, output_format, statistics, quiet, mode, unsafe_fixes), nl=False)
        if extras is not None and extras.show_fixes and not quiet:
            click.echo(extras.fixed_summary(outcomes, before, quiet=False, listing_only=True), nl=False)
    if extras is not None and extras.exit_non_zero_on_fix and any(o.fixed_count for o in outcomes):
        raise click.exceptions.Exit(EXIT_FINDINGS)
    _exit(outcomes, exit_zero or (extras is not None and extras.fix_only))


@main.command()
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule: code, name, fix, summary.")
@click.option("--output-format", "rule_format", type=click.Choice(["text", "json", "markdown"]), default="text",
              show_default=True, help="With --all: json prints every rule's metadata; markdown the README table.")
@click.option("--markdown", is_flag=True, help="With --all: the rule table as Markdown (as in the README).")
@click.option("--write-docs", type=click.Path(file_okay=False), default=None,
              help="Write docs/rules/<CODE>.md for every rule into this folder (generated from the rule classes).")
def rule(code: Optional[str], show_all: bool, rule_format: str, markdown: bool, write_docs: Optional[str]) -> None:
    """Print the documentation of rule CODE (e.g. GPU101 or item-in-loop)."""
    from gpulint.rule import all_rules

    rules = all_rules()
    if write_docs is not None:
        from gpulint.rule_docs import write_rule_docs

        for path in write_rule_docs(Path(write_docs)):
            click.echo(f"wrote {path}")
        return
    if markdown or rule_format == "markdown":
        click.echo(rule_table_markdown(), nl=False)
        return
    if rule_format == "json" and (show_all or code is None):
        click.echo(json.dumps([cls.metadata() for cls in rules.values()], indent=2))
        return
    if show_all or code is None:
        for c, cls in rules.items():
            click.echo(f"{c}  {cls.name:<28} {_fix_label(cls):<7} {cls.summary()}")
        return
    wanted = code.strip()
    for c, cls in rules.items():
        if c == wanted.upper() or cls.name == wanted.lower():
            click.echo(json.dumps(cls.metadata(), indent=2) if rule_format == "json" else cls.documentation())
            return
    raise _fail(f"unknown rule {code!r} (see `gpulint rule --all`)")


def _fix_label(cls) -> str:
    return cls.fix_label()


def rule_table_markdown() -> str:
    """The README's rule table, generated from the rules themselves."""
    from gpulint.rule import all_rules

    rows = ["| Code | Name | Fix | What it flags |", "| --- | --- | --- | --- |"]
    for code, cls in all_rules().items():
        if cls.pseudo:
            continue  # GPU001 syntax-error: documented by `gpulint rule GPU001`, not an anti-pattern
        summary = cls.summary().replace("|", "\\|")
        rows.append(f"| [{code}](docs/rules/{code}.md) | `{cls.name}` | {_fix_label(cls)} | {summary} |")
    return "\n".join(rows) + "\n"


from gpulint.clean import clean  # noqa: E402  (a subcommand in its own module)

main.add_command(clean)


@main.command()
def server() -> None:
    """Run the language server (LSP over stdio) for editors. Needs `pip install 'gpulint[lsp]'`."""
    try:
        from gpulint.server import serve
    except ImportError as exc:
        raise _fail(f"the language server needs pygls and lsprotocol: pip install 'gpulint[lsp]' ({exc.name} "
                    f"is missing)")
    serve()

