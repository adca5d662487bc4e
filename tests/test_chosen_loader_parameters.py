"""An evaluation loop over `loader = test_loader if test else valid_loader`, both parameters of the function
another module calls with its loaders: the copies of its batches are GPU202's when both loaders agree (both
unpinned: "with the loader pinned it can overlap"; heldout31a's Multimodal-Transformer, thirty-fifth landing). A
pair that disagrees is not known.
"""

from __future__ import annotations

from projects import lint_files

TRAIN = """\
    import torch


    def train_model(model, optimizer, train_loader, valid_loader, test_loader, epochs):
        def train():
            model.train()
            for text, label in train_loader:
                text, label = text.cuda(), label.cuda()
                loss = torch.nn.functional.cross_entropy(model(text), label)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()

        def evaluate(test=False):
            model.eval()
            loader = test_loader if test else valid_loader
            correct = torch.zeros((), device="cuda")
            with torch.no_grad():
                for text, label in loader:
                    text, label = text.cuda(), label.cuda()
                    correct += (model(text).argmax(1) == label).sum()
            return correct

        for epoch in range(epochs):
            train()
            evaluate()
            evaluate(test=True)
"""

MAIN = """\
    import torch
    from torch.utils.data import DataLoader
    from train import train_model

    model = torch.nn.Sequential(torch.nn.Linear(300, 300), torch.nn.ReLU(), torch.nn.Linear(300, 2)).cuda()
    optimizer = torch.optim.Adam(model.parameters(), fused=True)
    train_loader = DataLoader(train_data, batch_size=24, shuffle=True)
    valid_loader = DataLoader(valid_data, batch_size=24)
    test_loader = DataLoader(test_data, batch_size=24)
    train_model(model, optimizer, train_loader, valid_loader, test_loader, 40)
"""


def test_copies_of_a_loader_chosen_between_two_unpinned_parameters_are_reported(tmp_path):
    found = lint_files(tmp_path, {"train.py": TRAIN, "main.py": MAIN}, "GPU202")
    assert ("train.py", 20, "GPU202") in found
    assert ("train.py", 8, "GPU202") in found


def test_a_chosen_pair_that_disagrees_on_pinning_is_not_known(tmp_path):
    mixed = MAIN.replace("DataLoader(test_data, batch_size=24)", "DataLoader(test_data, batch_size=24, pin_memory=True)")
    found = lint_files(tmp_path, {"train.py": TRAIN, "main.py": mixed}, "GPU202")
    assert ("train.py", 20, "GPU202") not in found
    assert ("train.py", 8, "GPU202") in found
