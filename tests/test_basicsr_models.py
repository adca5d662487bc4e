"""Models of a training framework that owns the loop: BasicSR (issue 11, recall). Real-ESRGAN's training script is
`train_pipeline(root_path)` of `basicsr.train`; BasicSR's loop then calls `model.feed_data(train_data)` and
`model.optimize_parameters(current_iter)` once per iteration on the project's model class (a subclass of
`basicsr.models.srgan_model.SRGANModel`, registered with `@MODEL_REGISTRY.register()`). Those two methods are
per-step code (framework_steps.py); `validation` runs every N iterations and is not. A pool built under
`if not hasattr(self, 'queue_lr'):` is built once, on the first call, whatever calls it every step.
"""

from __future__ import annotations

from pathlib import Path

from projects import lint_files

MODEL = """\
    import torch
    from basicsr.models.srgan_model import SRGANModel
    from basicsr.utils.registry import MODEL_REGISTRY


    @MODEL_REGISTRY.register()
    class PoolModel(SRGANModel):
        def _enqueue(self):
            b, c, h, w = self.lq.size()
            if not hasattr(self, 'queue_lr'):
                self.queue_lr = torch.zeros(self.queue_size, c, h, w).cuda()
                self.queue_ptr = 0
            self.queue_lr[self.queue_ptr:self.queue_ptr + b] = self.lq.clone()

        @torch.no_grad()
        def feed_data(self, data):
            self.lq = data['lq'].to(self.device)
            self.noise = torch.zeros(self.lq.shape).cuda()
            self._enqueue()

        def optimize_parameters(self, current_iter):
            self.optimizer_g.zero_grad()
            self.output = self.net_g(self.lq + self.noise)
            l_g = self.cri_pix(self.output, self.lq)
            l_g.backward()
            self.optimizer_g.step()
            self.log_dict = {'l_g': l_g.item()}

        def validation(self, dataloader, current_iter, tb_logger, save_img):
            self.best = self.cri_pix(self.output, self.lq).item()
"""

TRAIN = """\
    import os.path as osp
    from basicsr.train import train_pipeline

    import realesrgan.models  # noqa: F401  (registers the model)

    if __name__ == '__main__':
        root_path = osp.abspath(osp.join(__file__, osp.pardir, osp.pardir))
        train_pipeline(root_path)
"""


def _lint(tmp_path: Path) -> set:
    return lint_files(tmp_path, {"realesrgan/__init__.py": "", "realesrgan/models/__init__.py": "",
                                 "realesrgan/models/pool_model.py": MODEL, "realesrgan/train.py": TRAIN})


def test_the_per_iteration_methods_of_a_basicsr_model_are_per_step(tmp_path: Path):
    found = _lint(tmp_path)
    assert ("pool_model.py", 18, "GPU203") in found  # a host buffer copied in every feed_data
    assert ("pool_model.py", 27, "GPU101") in found  # `.item()` in every optimize_parameters
    assert ("pool_model.py", 30, "GPU101") not in found  # validation: every N iterations


def test_a_pool_created_under_a_hasattr_test_is_built_once(tmp_path: Path):
    assert ("pool_model.py", 11, "GPU203") not in _lint(tmp_path)
