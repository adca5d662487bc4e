"""Inputs a loop loads on the host itself, one item per iteration, then copies to the GPU (recall56: the
`transfer` misses of per-image evaluation and inference loops, heldout16's flow and depth scripts): GPU410.

- An item of a project map-style dataset indexed directly (`image1, image2, flow = val_dataset[i]`, then
  `image1[None].cuda()`; `sample = dataset[i]`, then `sample["rays"].cuda()`).
- The output of torchvision's `ToTensor()` (or of a `Compose` pipeline ending in it) on an image read this
  iteration, copied with `.to(device)`.
- `torch.from_numpy(arr)` followed through the names the step rebinds (`x = torch.from_numpy(x).permute(2, 0, 1)`,
  `x = Variable(x.unsqueeze(0))`, `x = x.cuda()`), in a loop or in a function a loop calls every iteration.

Quiet: a dataset whose `__getitem__` moves its items to the device itself, a copy of an item made once (before
the loop), a pinned copy, an input bound only under a branch of the step, and loader batches (GPU201/GPU202's).
"""

from __future__ import annotations

import textwrap

from projects import check, found, write_project

DATA = textwrap.dedent("""\
    import numpy as np
    import torch
    from torch.utils import data


    class FlowDataset(data.Dataset):
        def __init__(self):
            self.files = []

        def __len__(self):
            return len(self.files)

        def __getitem__(self, i):
            img = np.load(self.files[i])
            return torch.from_numpy(img), torch.from_numpy(img), torch.from_numpy(img)


    class Chairs(FlowDataset):
        def __init__(self, split="train"):
            super().__init__()
            self.split = split
""")

EVALUATE = textwrap.dedent("""\
    import torch
    import datasets


    @torch.no_grad()
    def validate(model):
        model.eval()
        val_dataset = datasets.Chairs(split="validation")
        epe_list = []
        for val_id in range(len(val_dataset)):
            image1, image2, flow_gt = val_dataset[val_id]
            image1 = image1[None].cuda()
            image2 = image2[None].cuda()
            flow = model(image1, image2)
            epe_list.append((flow[0].cpu() - flow_gt).norm())
        return epe_list
""")

PREDICT = textwrap.dedent("""\
    import glob

    import numpy as np
    import torch
    from PIL import Image
    from torch.autograd import Variable
    from torchvision import transforms

    device = torch.device("cuda")
    model = torch.load("model.pt").to(device)
    model.eval()
    to_input = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5,), (0.5,))])
    with torch.no_grad():
        for path in glob.glob("images/*.jpg"):
            image = Image.open(path).convert("RGB")
            input_image = transforms.ToTensor()(image).unsqueeze(0)
            input_image = input_image.to(device)
            disp = model(input_image)
            np.save(path + ".npy", disp.cpu().numpy())
        for path in glob.glob("images/*.png"):
            x = np.asarray(Image.open(path), dtype=np.float32)
            x = torch.from_numpy(x).permute(2, 0, 1)
            x = Variable(x.unsqueeze(0))
            x = x.cuda()
            y = model(x)
            np.save(path + ".npy", y.cpu().numpy())
        for path in glob.glob("images/*.bmp"):
            z = to_input(Image.open(path)).to(device)
            np.save(path + ".npy", model(z).cpu().numpy())
""")


def _project(tmp_path, modules):
    root = write_project(tmp_path / "p", modules)
    return check(root, "--no-cache", "--exit-zero")


def _gpu410(tmp_path, modules):
    return {(path, row) for path, row, code in found(_project(tmp_path, modules)) if code == "GPU410"}


def test_dataset_items_indexed_and_copied_every_iteration_are_reported(tmp_path):
    found_ = _gpu410(tmp_path, {"datasets.py": DATA, "evaluate.py": EVALUATE})
    assert {("evaluate.py", 12), ("evaluate.py", 13)} <= found_


def test_the_message_names_the_dataset_and_the_way_out(tmp_path):
    items = _project(tmp_path, {"datasets.py": DATA, "evaluate.py": EVALUATE})
    messages = [d["message"] for d in items if d["code"] == "GPU410" and d["location"]["row"] == 12]
    assert messages and "`val_dataset[...]`" in messages[0] and "pin_memory=True" in messages[0]


def test_dataset_moving_its_items_itself_stays_quiet(tmp_path):
    moved = DATA.replace("return torch.from_numpy(img), torch.from_numpy(img), torch.from_numpy(img)",
                         "t = torch.from_numpy(img).cuda()\n        return t, t, t")
    assert moved != DATA
    assert not _gpu410(tmp_path, {"datasets.py": moved, "evaluate.py": EVALUATE})


def test_item_copied_once_before_the_loop_stays_quiet(tmp_path):
    once = EVALUATE.replace("    for val_id in range(len(val_dataset)):\n"
                            "        image1, image2, flow_gt = val_dataset[val_id]\n"
                            "        image1 = image1[None].cuda()\n"
                            "        image2 = image2[None].cuda()\n",
                            "    image1, image2, flow_gt = val_dataset[0]\n"
                            "    image1 = image1[None].cuda()\n"
                            "    image2 = image2[None].cuda()\n"
                            "    for val_id in range(len(val_dataset)):\n")
    assert once != EVALUATE
    assert not _gpu410(tmp_path, {"datasets.py": DATA, "evaluate.py": once})


def test_item_bound_only_under_a_branch_stays_quiet(tmp_path):
    branch = EVALUATE.replace("        image1, image2, flow_gt = val_dataset[val_id]\n",
                              "        if val_id:\n"
                              "            image1, image2, flow_gt = val_dataset[val_id]\n")
    assert branch != EVALUATE
    assert not _gpu410(tmp_path, {"datasets.py": DATA, "evaluate.py": branch})


def test_images_converted_on_the_host_and_copied_are_reported(tmp_path):
    found_ = _gpu410(tmp_path, {"predict.py": PREDICT})
    assert {("predict.py", 17), ("predict.py", 24), ("predict.py", 28)} <= found_


def test_pinned_copies_stay_quiet(tmp_path):
    pinned = PREDICT.replace("input_image.to(device)", "input_image.pin_memory().to(device, non_blocking=True)") \
        .replace("x = x.cuda()", "x = x.pin_memory().cuda(non_blocking=True)") \
        .replace("to_input(Image.open(path)).to(device)", "to_input(Image.open(path)).pin_memory().to(device)")
    assert pinned.count("pin_memory()") == 3
    assert not _gpu410(tmp_path, {"predict.py": pinned})


def test_from_numpy_in_a_helper_a_loop_calls_every_iteration(tmp_path):
    helper = textwrap.dedent("""\
        import glob

        import numpy as np
        import torch

        device = torch.device("cuda")
        net = torch.load("net.pt").to(device)


        def predict_img(net, full_img, device):
            img = torch.from_numpy(np.asarray(full_img, dtype=np.float32))
            img = img.unsqueeze(0)
            img = img.to(device=device, dtype=torch.float32)
            with torch.no_grad():
                return net(img).cpu()


        for path in glob.glob("*.png"):
            mask = predict_img(net, np.load(path), device)
            np.save(path + ".npy", mask.numpy())
    """)
    assert ("predict.py", 13) in _gpu410(tmp_path, {"predict.py": helper})


def test_loader_batches_stay_quiet(tmp_path):
    loop = textwrap.dedent("""\
        import torch
        from torch.utils.data import DataLoader
        import datasets

        model = torch.nn.Linear(8, 2).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loader = DataLoader(datasets.Chairs(), batch_size=4, pin_memory=True)
        for image1, image2, flow in loader:
            image1 = image1.cuda(non_blocking=True)
            loss = model(image1).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """)
    assert not _gpu410(tmp_path, {"datasets.py": DATA, "train.py": loop})


def test_constant_built_from_numpy_in_a_models_method_is_not_an_input(tmp_path):
    model = textwrap.dedent("""\
        import numpy as np
        import torch
        from torch.utils.data import DataLoader


        class STN(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(9, 9)

            def forward(self, x):
                iden = torch.from_numpy(np.eye(3).flatten().astype(np.float32)).view(1, 9)
                iden = iden.cuda()
                return self.fc(x) + iden


        model = STN().cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for (x,) in DataLoader(torch.randn(64, 9), batch_size=8, pin_memory=True):
            loss = model(x.cuda(non_blocking=True)).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    """)
    assert not _gpu410(tmp_path, {"stn.py": model})  # GPU203 reports the constant built on the host
