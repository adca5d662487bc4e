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


ENV = """
import torch


class Environment:
    def __init__(self, gym_env):
        self.gym_env = gym_env

    def initial(self):
        return dict(frame=torch.zeros(1, 4), done=torch.ones(1, 1, dtype=torch.uint8))

    def step(self, action):
        frame, reward, done, _ = self.gym_env.step(action.item())
        if done:
            frame = self.gym_env.reset()
        return dict(frame=torch.from_numpy(frame).view(1, -1), done=torch.tensor(done).view(1, 1),
                    reward=torch.tensor(reward).view(1, 1))
"""

LEARNER = """
import torch
import torch.multiprocessing as mp
from torch import nn

import environment


class PolicyNet(nn.Module):
    def __init__(self, num_actions):
        super().__init__()
        self.fc = nn.Linear(4, num_actions)

    def forward(self, inputs):
        logits = self.fc(inputs["frame"].float())
        return dict(action=torch.multinomial(logits.softmax(-1), 1))


Net = PolicyNet


def act(flags, actor_index, free_queue, full_queue, model, buffers):
    env = environment.Environment(create_env(flags))
    env_output = env.initial()
    while True:
        index = free_queue.get()
        if index is None:
            break
        for t in range(flags.unroll_length):
            with torch.no_grad():
                agent_output = model(env_output)
            env_output = env.step(agent_output["action"])
            buffers["reward"][index][t, ...] = env_output["reward"]
            if env_output["done"].item():
                print("episode over at", actor_index)
        full_queue.put(index)


def learn(flags, model, learner_model, batch, optimizer):
    output = learner_model(batch)
    loss = output["action"].float().mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    model.load_state_dict(learner_model.state_dict())
    return loss.item()


def train(flags, buffers):
    flags.device = torch.device("cuda")
    model = Net(6)
    model.share_memory()
    ctx = mp.get_context("fork")
    free_queue, full_queue = ctx.SimpleQueue(), ctx.SimpleQueue()
    for i in range(flags.num_actors):
        actor = ctx.Process(target=act, args=(flags, i, free_queue, full_queue, model, buffers))
        actor.start()
    learner_model = Net(6).to(device=flags.device)
    optimizer = torch.optim.RMSprop(learner_model.parameters(), lr=flags.learning_rate)
    step = 0
    while step < flags.total_steps:
        batch = {k: buffers[k][full_queue.get()].to(device=flags.device) for k in buffers}
        stats = learn(flags, model, learner_model, batch, optimizer)
        step += 1


def test(flags, num_episodes=10):
    env = environment.Environment(create_env(flags))
    model = Net(6)
    model.eval()
    checkpoint = torch.load(flags.checkpoint, map_location="cpu")
    model.load_state_dict(checkpoint["model_state_dict"])
    observation = env.initial()
    returns = []
    while len(returns) < num_episodes:
        policy_outputs = model(observation)
        observation = env.step(policy_outputs["action"])
        if observation["done"].item():
            returns.append(observation["reward"].item())
"""


def test_actor_and_test_loops_of_a_host_model_are_not_gpu_steps(tmp_path: Path) -> None:
    got = lint_files(tmp_path / "rl", {"environment.py": ENV, "monobeast.py": LEARNER})
    # the actor process runs the shared model `train` built and never moved; `test()` a model loaded to the CPU
    for line in (31, 32, 34, 76, 77, 78, 79):
        assert not {f for f in got if f[0] == "monobeast.py" and f[1] == line}, line
    assert not {f for f in got if f[0] == "environment.py"}
    # the learner's own step, on the CUDA learner model, is still reported
    assert ("monobeast.py", 46, "GPU101") in got


def test_an_actor_given_a_moved_model_still_syncs(tmp_path: Path) -> None:
    moved = LEARNER.replace("    model.share_memory()\n", "    model = model.cuda()\n")
    got = lint_files(tmp_path / "rl", {"environment.py": ENV, "monobeast.py": moved})
    assert ("monobeast.py", 34, "GPU101") in got  # the actor's model is on the GPU now


def test_a_test_loop_whose_model_is_moved_elsewhere_still_syncs(tmp_path: Path) -> None:
    moved = LEARNER.replace('map_location="cpu"', 'map_location=flags.device')
    got = lint_files(tmp_path / "rl", {"environment.py": ENV, "monobeast.py": moved})
    assert ("monobeast.py", 78, "GPU101") in got  # a device named in `test()`: not decided as a host loop


EVAL_APPEND = """
import numpy as np
import torch


def evaluate(model, loader):
    model = model.cuda()
    preds = None
    for batch in loader:
        logits = model(batch.cuda(non_blocking=True))
        if preds is None:
            preds = logits.detach().cpu().numpy()
        else:
            preds = np.append(preds, logits.detach().cpu().numpy(), axis=0)
    return preds


def evaluate_reset(model, loader):
    model = model.cuda()
    for batch in loader:
        preds = None
        logits = model(batch.cuda(non_blocking=True))
        if preds is None:
            preds = logits.detach().cpu().numpy()
        print(preds)
"""


def test_the_first_batch_branch_of_an_accumulation_runs_once(tmp_path: Path) -> None:
    got = lint_files(tmp_path / "p", {"evaluate.py": EVAL_APPEND}, "GPU104")
    assert ("evaluate.py", 12, "GPU104") not in got  # `if preds is None:` holds on the first batch only
    assert ("evaluate.py", 14, "GPU104") in got  # the `else` branch copies every batch
    assert ("evaluate.py", 24, "GPU104") in got  # set back to None every iteration: the branch runs every time


EVAL_LISTS = """
import numpy as np
import torch


def valid(model, loader):
    model = model.cuda()
    all_preds = []
    for x in loader:
        preds = model(x.cuda(non_blocking=True)).argmax(-1)
        if len(all_preds) == 0:
            all_preds.append(preds.detach().cpu().numpy())
        else:
            all_preds[0] = np.append(all_preds[0], preds.detach().cpu().numpy(), axis=0)
    all_preds = all_preds[0]
    return all_preds


def valid_cleared(model, loader):
    model = model.cuda()
    all_preds = []
    for x in loader:
        preds = model(x.cuda(non_blocking=True)).argmax(-1)
        if not all_preds:
            all_preds.append(preds.detach().cpu().numpy())
        print(all_preds)
        all_preds.clear()
"""


def test_the_first_batch_branch_of_a_list_filled_once_runs_once(tmp_path: Path) -> None:
    """ViT-pytorch's `valid`: `if len(all_preds) == 0: all_preds.append(...)` fills the list it tests (the name is
    rebound after the loop, so the test is not read as a counter's)."""
    got = lint_files(tmp_path / "p", {"evaluate.py": EVAL_LISTS}, "GPU104")
    assert ("evaluate.py", 12, "GPU104") not in got  # the first batch only
    assert ("evaluate.py", 14, "GPU104") in got  # the `else` branch copies every batch
    assert ("evaluate.py", 25, "GPU104") in got  # emptied every iteration: the branch runs every time


DETECT = """
import torch


def detect(model, loader):
    model = model.cuda()
    for images in loader:
        scores = model(images.cuda(non_blocking=True))
        final_scores = torch.Tensor([])
        final_boxes = torch.Tensor(4, 4)
        final_scores = final_scores.cuda()
        final_boxes = final_boxes.cuda()
        final_scores = torch.cat((final_scores, scores))
        print(final_scores, final_boxes)
"""


def test_an_empty_legacy_tensor_moved_each_step_copies_nothing(tmp_path: Path) -> None:
    got = lint_files(tmp_path / "p", {"detect.py": DETECT}, "GPU203")
    assert ("detect.py", 11, "GPU203") not in got  # `torch.Tensor([])`: no values to copy
    assert ("detect.py", 12, "GPU203") in got  # a 4x4 host allocation copied every step


def test_an_actor_whose_shared_model_a_helper_moves_in_place_still_syncs(tmp_path: Path) -> None:
    moved = LEARNER.replace("    model.share_memory()\n", "    model.share_memory()\n    place(model, flags)\n") + \
        "\n\ndef place(net, flags):\n    net.to(flags.device)\n"
    got = lint_files(tmp_path / "rl", {"environment.py": ENV, "monobeast.py": moved})
    assert ("monobeast.py", 34, "GPU101") in got  # `net.to(...)` moves the very object the actors run


LOSS_IN_LOOP = """
import torch
from torch import nn

W = torch.randn(4, 2, device="cuda", requires_grad=True)


def train(loader, opt):
    for x, y in loader:
        criterion = nn.MSELoss()
        loss = criterion(x @ W, y)
        loss.backward()
        opt.step()
"""


def test_a_loss_built_in_the_loop_is_no_host_model(tmp_path: Path) -> None:
    """A loss module (no parameter layer of its own) computes where its input is: building it in the loop does not
    make the loop a CPU loop, and the construction is reported every step."""
    got = lint_files(tmp_path / "p", {"train.py": LOSS_IN_LOOP}, "GPU408")
    assert got == {("train.py", 10, "GPU408")}


def test_a_model_handed_to_a_call_not_followed_may_be_moved_there(tmp_path: Path) -> None:
    """`Wrapper(model).cuda()` / `placement.wrap(model)`: a call gpulint does not follow may move the model in
    place, so the loop running it is not decided as a host loop."""
    wrapped = LEARNER.replace("    model.share_memory()\n", "    model.share_memory()\n    placement.wrap(model)\n")
    got = lint_files(tmp_path / "rl", {"environment.py": ENV, "monobeast.py": wrapped})
    assert ("monobeast.py", 34, "GPU101") in got  # the actor's model may be on the GPU now
    got = lint_files(tmp_path / "rl2", {"environment.py": ENV, "monobeast.py": LEARNER})
    assert ("monobeast.py", 34, "GPU101") not in got  # without the call, the shared model stays on the host
