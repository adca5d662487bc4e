"""GPU403 stays silent in a module that chooses a precision; a detection metric named `precision` and NumPy
float64 host arrays (a diffusion schedule's betas) choose none: the fp32 step is still reported. A precision
setting (`args.precision`, `--precision`, `precision=`) or a half dtype keeps it silent.
"""

from __future__ import annotations

import textwrap

from projects import lint_script

SCRIPT = textwrap.dedent("""\
    import numpy as np
    import torch
    import torchvision


    def train(loader, evaluate):
        betas = np.linspace(1e-4, 0.02, 1000, dtype=np.float64)
        model = torchvision.models.resnet50().cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
        for epoch in range(10):
            for x in loader:
                x = x.cuda(non_blocking=True)
                loss = model(x).square().mean()
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            precision, recall = evaluate(model)
            print("validation/precision", precision, recall, betas.sum())


    if __name__ == "__main__":
        data = torch.utils.data.TensorDataset(torch.randn(256, 3, 32, 32))
        train(torch.utils.data.DataLoader(data, batch_size=32, pin_memory=True, num_workers=4), None)
""")


def _fp32(found):
    return {row for row, code in found if code == "GPU403"}


def test_metric_named_precision_and_numpy_float64_choose_no_precision(tmp_path):
    assert _fp32(lint_script(tmp_path, SCRIPT)) == {13}


def test_a_precision_setting_or_half_dtype_keeps_it_silent(tmp_path):
    for i, change in enumerate(("precision = args.precision", "parser.add_argument('--precision')",
                                "x = torch.zeros(1, dtype=torch.float16)", "scaler = torch.amp.GradScaler()")):
        text = SCRIPT.replace("    betas = ", f"    {change}\n    betas = ")
        assert text != SCRIPT
        assert _fp32(lint_script(tmp_path / str(i), text)) == set(), change


def test_a_numpy_float32_host_buffer_chooses_no_precision(tmp_path):
    """An evaluation's prediction buffer (`np.zeros((n, joints, 3), dtype=np.float32)`, HRNet's pose
    validation) lives on the host: the fp32 CUDA step beside it is still reported. An integer NumPy dtype still
    counts (the measured launch-bound shapes), so does a torch float32 one."""
    text = SCRIPT.replace("dtype=np.float64", "dtype=np.float32")
    assert text != SCRIPT
    assert _fp32(lint_script(tmp_path / "f32", text)) == {13}
    for i, dtype in enumerate(("np.uint8", "torch.float32")):
        assert _fp32(lint_script(tmp_path / str(i), SCRIPT.replace("dtype=np.float64", f"dtype={dtype}"))) == set()
