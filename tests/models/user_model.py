"""A model of the user's own for model/generate.py's MODULE:FUNCTION
(tests/integration/generate_models.sh): a small CNN with a residual block,
and one whose forward leaves a parameter unused (refused: the traced graph
does not read every parameter of the module)."""
import torch
from torch import nn


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.block = nn.Conv2d(16, 16, 3, padding=1)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.stem(x)))
        x = x + torch.relu(self.block(x))
        return self.head(x.mean((2, 3)))


class Unused(Small):
    def __init__(self):
        super().__init__()
        self.spare = nn.Linear(4, 4)  # never used by forward


def small_cnn(batch):
    return Small(), torch.randn(batch, 3, 32, 32)


def unused_param(batch):
    return Unused(), torch.randn(batch, 3, 32, 32)
