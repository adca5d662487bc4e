"""`gpulint clean`: remove the results cache."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import click

from gpulint.cache import cache_directory, clear
from gpulint.config import ConfigError, find_config, load


@click.command()
@click.option("--config", type=click.Path(dir_okay=False), help="Use this pyproject.toml or gpulint.toml.")
def clean(config: Optional[str]) -> None:
    """Remove the results cache (`.gpulint_cache/`, or `cache-dir` from the config)."""
    try:
        settings = load(Path(config)) if config else load(find_config(Path.cwd()))
    except ConfigError as exc:
        click.echo(f"gpulint: error: {exc}", err=True)
        raise click.exceptions.Exit(2)
    directory = cache_directory(settings)
    try:
        removed = clear(directory)
    except OSError as exc:
        click.echo(f"gpulint: error: {exc}", err=True)
        raise click.exceptions.Exit(2)
    click.echo(f"Removed {directory}" if removed else f"No cache at {directory}")
