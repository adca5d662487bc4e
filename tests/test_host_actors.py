"""Code that never touches the GPU in a project that does (branch precision25): a loop whose model is only ever a
host model (an RL actor process fed the shared, never-moved model; a `test()` that builds the network and loads
a checkpoint with `map_location="cpu"`), a host tensor updated in place (`boxes = boxes.cpu()` then
`boxes /= scale`), and `nn.DataParallel` on the branch taken only without CUDA."""

from __future__ import annotations

from pathlib import Path

from tests.projects import lint_files

EVAL_BOXES = """
import torch


def evaluate(dataset, model):
    results = []
    with torch.no_grad():
        for index in range(len(dataset)):
            data = dataset[index]
            scale = data['scale']
            scores, labels, boxes = model(data['img'].cuda().float().unsqueeze(dim=0))
            boxes = boxes.cpu()
            boxes /= scale
            for box_id in range(boxes.shape[0]):
                box = boxes[box_id, :]
                results.append({'bbox': box.tolist()})
            other = labels.cuda()
            other /= scale
            results.append(other.tolist())
    return results
"""


def test_a_host_copy_updated_in_place_stays_on_the_host(tmp_path: Path) -> None:
    got = lint_files(tmp_path / "p", {"coco_eval.py": EVAL_BOXES}, "GPU102")
    assert ("coco_eval.py", 16, "GPU102") not in got  # `box` is a row of `boxes.cpu()`, divided in place
    assert ("coco_eval.py", 19, "GPU102") in got  # a CUDA tensor divided in place is still on the GPU


TRAIN_DP = """
import torch


def main(loader):
    model = torch.nn.Linear(4, 2)
    if torch.cuda.is_available():
        model = torch.nn.DataParallel(model).cuda()
    else:
        model = torch.nn.DataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        model(x).sum().backward()
        opt.step()


if __name__ == "__main__":
    main(None)
"""


def test_data_parallel_on_the_branch_without_cuda_is_not_reported(tmp_path: Path) -> None:
    got = lint_files(tmp_path / "p", {"train.py": TRAIN_DP}, "GPU407")
    assert got == {("train.py", 8, "GPU407")}  # the CUDA branch's wrapper only, not the `else` one at 10
