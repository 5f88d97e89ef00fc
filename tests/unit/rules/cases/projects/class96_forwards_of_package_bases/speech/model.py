"""A model class whose base comes from the package's own module by an absolute import
(`from speech.base import AbsModel`, as a package that never imports relatively writes
it) is a module as much as one based on `from .base import AbsModel`: its `forward` runs
once per step on the batch, on the model's device, which the file does not show (hints).

What a forward unpacks from the items of a container it was only guessed to hold on the
GPU (`for layer, out in intermediate`: pairs of a layer's number and its output) is no
GPU value: nothing says which part is the tensor, and the layer's number is an int."""

import torch

from speech.base import AbsModel


class ASRModel(AbsModel):
    def __init__(self, encoder, decoder, aux_layers):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.aux_layers = aux_layers

    def forward(self, speech, speech_lengths, text, text_lengths):
        assert text_lengths.dim() == 1, text_lengths.shape
        text = text[:, : text_lengths.max()]  # hint: GPU001
        encoded = self.encoder(speech, speech_lengths)
        intermediate = encoded[1]
        loss = torch.zeros((), device=speech.device)
        for layer, out in intermediate:
            key = str(layer)  # must not: GPU001
            if key in self.aux_layers:
                loss = loss + self.decoder(out, text).mean()
        return loss
