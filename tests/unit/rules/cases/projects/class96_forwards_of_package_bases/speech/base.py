"""The package's abstract model: every task's model derives from it."""

import torch


class AbsModel(torch.nn.Module):
    def forward(self, speech, speech_lengths, text, text_lengths):
        raise NotImplementedError
