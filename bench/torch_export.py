"""Exports the PyTorch twin of a tonnx zoo model with Python's torch.onnx (the peer).

torchvision models come from torchvision (weights=None); the pytorch/examples models
(DCGAN, SuperResolution, word_language_model) are defined here with the same structure.
Prints export_s=SECONDS. Run with Debian's /usr/bin/python3 (where python3-torch loads).
"""
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision


class Generator(nn.Module):
    def __init__(self, nz=100, ngf=64, nc=3):
        super().__init__()
        def up(i, o, s, p):
            return nn.ConvTranspose2d(i, o, 4, s, p, bias=False)
        self.main = nn.Sequential(
            up(nz, ngf * 8, 1, 0), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
            up(ngf * 8, ngf * 4, 2, 1), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            up(ngf * 4, ngf * 2, 2, 1), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            up(ngf * 2, ngf, 2, 1), nn.BatchNorm2d(ngf), nn.ReLU(True),
            up(ngf, nc, 2, 1), nn.Tanh())

    def forward(self, x):
        return self.main(x)


class Discriminator(nn.Module):
    def __init__(self, nc=3, ndf=64):
        super().__init__()
        def down(i, o, s, p):
            return nn.Conv2d(i, o, 4, s, p, bias=False)
        self.main = nn.Sequential(
            down(nc, ndf, 2, 1), nn.LeakyReLU(0.2, True),
            down(ndf, ndf * 2, 2, 1), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, True),
            down(ndf * 2, ndf * 4, 2, 1), nn.BatchNorm2d(ndf * 4), nn.LeakyReLU(0.2, True),
            down(ndf * 4, ndf * 8, 2, 1), nn.BatchNorm2d(ndf * 8), nn.LeakyReLU(0.2, True),
            down(ndf * 8, 1, 1, 0), nn.Sigmoid())

    def forward(self, x):
        return self.main(x).view(-1, 1).squeeze(1)


class SuperResolution(nn.Module):
    def __init__(self, r=3):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 64, 5, 1, 2)
        self.conv2 = nn.Conv2d(64, 64, 3, 1, 1)
        self.conv3 = nn.Conv2d(64, 32, 3, 1, 1)
        self.conv4 = nn.Conv2d(32, r * r, 3, 1, 1)
        self.pixel_shuffle = nn.PixelShuffle(r)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        return self.pixel_shuffle(self.conv4(x))


class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken=33278, ninp=200, nhid=200, nlayers=2, dropout=0.2):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ("LSTM", "GRU"):
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity={"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type],
                              dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, tokens, *hidden):
        emb = self.drop(self.encoder(tokens))
        output, hidden = self.rnn(emb, hidden if len(hidden) == 2 else hidden[0])
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        hidden = hidden if isinstance(hidden, tuple) else (hidden,)
        return (F.log_softmax(decoded, dim=1),) + hidden


# zoo name -> (d_model, heads, feed-forward, layers): nn.TransformerEncoder, sequence first.
ENCODERS = {"transformer_encoder": (2048, 16, 8192, 16), "transformer_encoder_small": (256, 4, 1024, 2)}


def build(name):
    if name in ENCODERS:
        d, h, ff, n = ENCODERS[name]
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, h, ff), n).eval()
        # It clones one layer n times: every layer gets its own random weights (as tonnx's zoo
        # model), or torch.onnx's deduplication by value would keep one layer's.
        with torch.no_grad():
            for k, p in enc.named_parameters():
                if p.dim() >= 2:
                    nn.init.xavier_uniform_(p)
                elif k.endswith(".weight"):
                    p.uniform_(0.9, 1.1)
                else:
                    p.uniform_(-0.1, 0.1)
        return enc
    examples = {"dcgan_generator": Generator, "dcgan_discriminator": Discriminator,
                "super_resolution": SuperResolution}
    if name in examples:
        return examples[name]().eval()
    if name.startswith("word_language_model"):
        kind = {"word_language_model": "LSTM", "word_language_model_gru": "GRU",
                "word_language_model_rnn_tanh": "RNN_TANH", "word_language_model_rnn_relu": "RNN_RELU"}[name]
        return RNNModel(kind).eval()
    kwargs = {"aux_logits": False, "init_weights": False} if name == "inception_v3" else {}
    return getattr(torchvision.models, name)(weights=None, **kwargs).eval()


def main():
    name, shapes, out = sys.argv[1], sys.argv[2], sys.argv[3]
    torch.manual_seed(0)
    model = build(name)
    inputs = []
    for i, shape in enumerate(shapes.split(",")):
        dims = [int(d) for d in shape.split("x")]
        inputs.append(torch.randint(0, 33278, dims) if name.startswith("word_language_model") and i == 0
                      else torch.randn(*dims))
    t0 = time.perf_counter()
    torch.onnx.export(model, tuple(inputs), out, opset_version=17, do_constant_folding=True)
    print(f"export_s={time.perf_counter() - t0:.3f}")


if __name__ == "__main__":
    main()
