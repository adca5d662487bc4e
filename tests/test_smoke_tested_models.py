"""A model module that tries its class once under `if __name__ == "__main__":` (random tensors through
`Model(configs)`, no loop) while the project builds it elsewhere by a route no search follows
(`model_dict[self.args.model].Model(self.args)`) is still a trained network: its `forward` runs on every batch
(the assumed-forward fallback, analysis/trained_modules.py), so its per-step host build is reported (GPU203;
heldout31a's FEDformer, thirty-fifth landing). A class only its own smoke test builds stays quiet.
"""

from __future__ import annotations

from projects import lint_files

MODEL = """\
    import torch
    import torch.nn as nn

    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


    class Model(nn.Module):
        def __init__(self, configs):
            super().__init__()
            self.pred_len = configs.pred_len
            self.proj = nn.Linear(configs.d_model, configs.c_out)

        def forward(self, x_enc, x_dec):
            zeros = torch.zeros([x_dec.shape[0], self.pred_len, x_dec.shape[2]]).to(device)
            return self.proj(x_enc) + zeros.sum()


    if __name__ == "__main__":
        class Configs:
            pred_len = 96
            d_model = 16
            c_out = 7

        model = Model(Configs())
        print(model.forward(torch.randn(3, 96, 16), torch.randn(3, 96, 7)))
"""

EXP = """\
    import torch
    from models import FEDformer, Autoformer


    class Exp:
        def __init__(self, args):
            self.args = args
            self.device = torch.device("cuda:0")
            model_dict = {"FEDformer": FEDformer, "Autoformer": Autoformer}
            self.model = model_dict[self.args.model].Model(self.args).float().to(self.device)

        def train(self, loader, optimizer):
            for batch_x, batch_y in loader:
                out = self.model(batch_x.float().to(self.device), batch_y.float().to(self.device))
                loss = out.mean()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
"""


def test_a_model_its_module_smoke_tests_but_the_project_trains_runs_its_forward_every_batch(tmp_path):
    files = {"models/__init__.py": "", "models/FEDformer.py": MODEL, "models/Autoformer.py": MODEL,
             "exp/exp_main.py": EXP}
    found = lint_files(tmp_path, files, "GPU203")
    assert ("FEDformer.py", 14, "GPU203") in found


def test_a_class_only_its_own_smoke_test_builds_stays_quiet(tmp_path):
    alone = MODEL.replace("class Model(", "class Lonely(").replace("model = Model(", "model = Lonely(")
    assert not lint_files(tmp_path, {"lonely.py": alone}, "GPU203")
