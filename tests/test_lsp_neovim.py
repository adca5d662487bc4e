"""A real editor: headless Neovim (Debian's 0.7.x is enough) runs `gpulint server` as docs/editors.md says,
opens a training script, waits for the diagnostics, applies the quick fix, and we read its buffer back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pygls")

NVIM = shutil.which("nvim")
pytestmark = pytest.mark.skipif(NVIM is None, reason="nvim is not installed (apt-get install -y neovim)")

SCRIPT = textwrap.dedent("""\
    import torch
    from torch.utils.data import DataLoader

    device = "cuda"
    loader = DataLoader(list(range(8)), batch_size=2)
    for batch in loader:
        batch = batch.to(device)
""")

# The Neovim 0.7-0.10 setup of docs/editors.md (vim.lsp.start_client), then what a user does by hand:
# wait for the findings, ask for the code actions on the DataLoader line, apply the gpulint quick fix.
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
    if not vim.wait(60000, function() return #vim.diagnostic.get(0) > 0 end, 50) then
      finish({ error = "no diagnostics" })
      return
    end
    local codes = {}
    for _, d in ipairs(vim.diagnostic.get(0)) do table.insert(codes, { d.lnum, d.code or d.user_data.lsp.code }) end
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


def test_neovim_applies_a_quick_fix_from_gpulint_server(tmp_path: Path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    (tmp_path / "init.lua").write_text(INIT_LUA)
    out = tmp_path / "out.json"
    gpulint = Path(sys.executable).with_name("gpulint")
    env = {**os.environ, "GPULINT_TEST_OUT": str(out), "GPULINT_TEST_FILE": str(script),
           "GPULINT_TEST_CMD": str(gpulint), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    run = subprocess.run([NVIM, "--headless", "-n", "-i", "NONE", "-u", str(tmp_path / "init.lua")], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=180)
    assert out.exists(), f"nvim wrote nothing (exit {run.returncode}): {run.stderr[-2000:]}"
    result = json.loads(out.read_text())
    assert "error" not in result, result
    assert [4, "GPU201"] in result["codes"]  # the DataLoader line, 0-based, as the editor shows it
    assert result["applied"] is not None, result["titles"]
    assert any(title.startswith("Disable GPU201") for title in result["titles"])
    fixed = "\n".join(result["lines"]) + "\n"
    # What the CLI makes of that one rule's fix on the same text:
    expected = tmp_path / "expected" / "train.py"
    expected.parent.mkdir()
    expected.write_text(SCRIPT)
    subprocess.run([str(gpulint), "check", "--fix", "--no-cache", "--select", "GPU201", str(expected)],
                   cwd=tmp_path, capture_output=True)
    assert fixed != SCRIPT and fixed == expected.read_text()
    script_on_disk = script.read_text()
    assert script_on_disk == SCRIPT  # the fix went to the buffer, not behind the editor's back to the file
