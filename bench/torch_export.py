"""Exports the PyTorch twin of a tonnx zoo model with Python's torch.onnx (the peer).

torchvision models come from torchvision (weights=None); the pytorch/examples models
(DCGAN, SuperResolution, word_language_model) are defined here with the same structure.
Prints export_s=SECONDS; `--test-data DIR` after the output also writes the inputs and
torch's outputs as DIR/test_data_set_0/*.pb, and the model's outputs computed in float64 (the
model and its float inputs in double) as DIR/float64_reference/output_K.pb, the reference of
the accuracy rule (tests/accuracy_rule.py). Run with Debian's /usr/bin/python3 (where
python3-torch loads).
"""
import math
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


def split_heads(x, heads):
    return x.view(x.size(0), x.size(1), heads, x.size(2) // heads).transpose(1, 2)


def merge_heads(x):
    t = x.transpose(1, 2).contiguous()
    return t.view(t.size(0), t.size(1), t.size(2) * t.size(3))


class BertLayer(nn.Module):
    """Hugging Face's BertLayer, as tonnx's zoo model bert_base writes it in C++."""
    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.attention_output, self.attention_norm = nn.Linear(d, d), nn.LayerNorm(d, eps=1e-12)
        self.intermediate, self.output = nn.Linear(d, ff), nn.Linear(ff, d)
        self.output_norm = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x, mask):
        q, k, v = (split_heads(f(x), self.heads) for f in (self.query, self.key, self.value))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
        probs = torch.softmax(scores + mask, -1)
        h = self.attention_norm(self.attention_output(merge_heads(torch.matmul(probs, v))) + x)
        return self.output_norm(self.output(F.gelu(self.intermediate(h))) + h)


class Bert(nn.Module):
    def __init__(self, vocab=30522, positions=512, d=768, heads=12, ff=3072, layers=12):
        super().__init__()
        self.word_embeddings, self.position_embeddings = nn.Embedding(vocab, d), nn.Embedding(positions, d)
        self.token_type_embeddings, self.embedding_norm = nn.Embedding(2, d), nn.LayerNorm(d, eps=1e-12)
        self.encoder = nn.ModuleList(BertLayer(d, heads, ff) for _ in range(layers))
        self.register_buffer("position_ids", torch.arange(positions).unsqueeze(0))
        self.register_buffer("token_type_ids", torch.zeros(1, positions, dtype=torch.long))

    def forward(self, ids, attention_mask):
        t = ids.size(1)
        h = (self.word_embeddings(ids) + self.position_embeddings(self.position_ids[:, :t]) +
             self.token_type_embeddings(self.token_type_ids[:, :t]))
        h = self.embedding_norm(h)
        mask = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        for layer in self.encoder:
            h = layer(h, mask)
        return h


class Gpt2Block(nn.Module):
    def __init__(self, d, heads, positions):
        super().__init__()
        self.d, self.heads = d, heads
        self.ln_1, self.c_attn, self.attn_proj = nn.LayerNorm(d), nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln_2, self.c_fc, self.mlp_proj = nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("causal", torch.ones(positions, positions, dtype=torch.bool).tril().view(
            1, 1, positions, positions))

    def forward(self, x):
        q, k, v = (split_heads(t, self.heads) for t in self.c_attn(self.ln_1(x)).split(self.d, 2))
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
        t = x.size(1)
        w = torch.softmax(torch.where(self.causal[:, :, :t, :t], w, torch.tensor(torch.finfo(w.dtype).min)), -1)
        h = x + self.attn_proj(merge_heads(torch.matmul(w, v)))
        return h + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(h)), approximate="tanh"))


class Gpt2(nn.Module):
    def __init__(self, vocab=50257, positions=1024, d=768, heads=12, layers=12):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(positions, d)
        self.h = nn.ModuleList(Gpt2Block(d, heads, positions) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.register_buffer("position_ids", torch.arange(positions).unsqueeze(0))

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(self.position_ids[:, :ids.size(1)])
        for block in self.h:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)


def randomize_transformer(m, matrix_init, bias):
    """As tonnx's zoo: matrices by matrix_init, LayerNorm scales U(0.9, 1.1), other vectors
    U(-bias, bias); each parameter its own draw."""
    with torch.no_grad():
        for k, p in m.named_parameters():
            if p.dim() >= 2:
                matrix_init(p)
            elif k.endswith(".weight"):
                p.uniform_(0.9, 1.1)
            else:
                p.uniform_(-bias, bias)
    return m.eval()


TRANSFORMERS = {"bert_base": Bert, "gpt2_small": Gpt2}
VOCAB = {"bert_base": 30522, "gpt2_small": 50257}


def example_inputs(name, shapes):
    """The zoo's example inputs: token ids (and BERT's mask, its last eighth padding), or randn."""
    if name in TRANSFORMERS:
        ids = torch.randint(0, VOCAB[name], shapes[0])
        if name != "bert_base":
            return [ids]
        mask = torch.ones(shapes[1], dtype=torch.long)
        t = mask.size(-1)
        if t > 1:
            mask[..., t - max(1, t // 8):] = 0
        return [ids, mask]
    return [torch.randint(0, 33278, dims) if name.startswith("word_language_model") and i == 0
            else torch.randn(*dims) for i, dims in enumerate(shapes)]


# zoo name -> (d_model, heads, feed-forward, layers): nn.TransformerEncoder, sequence first.
ENCODERS = {"transformer_encoder": (2048, 16, 8192, 16), "transformer_encoder_small": (256, 4, 1024, 2)}


def build(name):
    if name in TRANSFORMERS:
        return randomize_transformer(TRANSFORMERS[name](), lambda w: w.normal_(0, 0.02), 0.02)
    if name in ENCODERS:
        d, h, ff, n = ENCODERS[name]
        enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, h, ff), n)
        # It clones one layer n times: every layer gets its own random weights (as tonnx's zoo
        # model), or torch.onnx's deduplication by value would keep one layer's.
        return randomize_transformer(enc, nn.init.xavier_uniform_, 0.1)
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


def write_tensors(d, kind, tensors):
    import os
    from onnx import numpy_helper
    os.makedirs(d, exist_ok=True)
    for k, t in enumerate(tensors):
        with open(os.path.join(d, f"{kind}_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(t.numpy()).SerializeToString())


def outputs_of(model, inputs):
    with torch.no_grad():
        outputs = model(*inputs)
    return outputs if isinstance(outputs, tuple) else (outputs,)


def write_test_data(directory, model, inputs):
    """DIR/test_data_set_0/input_K.pb and output_K.pb (TensorProto): the inputs and torch's
    outputs; DIR/float64_reference/output_K.pb: the outputs in double."""
    import copy
    import os
    d = os.path.join(directory, "test_data_set_0")
    write_tensors(d, "input", inputs)
    write_tensors(d, "output", outputs_of(model, inputs))
    double = copy.deepcopy(model).double()
    ref = outputs_of(double, [t.double() if t.is_floating_point() else t for t in inputs])
    write_tensors(os.path.join(directory, "float64_reference"), "output", ref)


def main():
    name, shapes, out = sys.argv[1], sys.argv[2], sys.argv[3]
    torch.manual_seed(0)
    model = build(name)
    inputs = example_inputs(name, [[int(d) for d in shape.split("x")] for shape in shapes.split(",")])
    t0 = time.perf_counter()
    torch.onnx.export(model, tuple(inputs), out, opset_version=17, do_constant_folding=True)
    print(f"export_s={time.perf_counter() - t0:.3f}")
    if len(sys.argv) > 5 and sys.argv[4] == "--test-data":
        write_test_data(sys.argv[5], model, inputs)


if __name__ == "__main__":
    main()
