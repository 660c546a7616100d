"""Exports the torchvision twin of a tonnx zoo model with Python's torch.onnx (the peer).

Prints export_s=SECONDS. Run with Debian's /usr/bin/python3 (where python3-torch loads).
"""
import sys
import time

import torch
import torchvision


def build(name):
    m = getattr(torchvision.models, name)(weights=None)
    return m.eval()


def main():
    name, shape, out = sys.argv[1], sys.argv[2], sys.argv[3]
    torch.manual_seed(0)
    model = build(name)
    x = torch.randn(*[int(d) for d in shape.split("x")])
    t0 = time.perf_counter()
    torch.onnx.export(model, (x,), out, opset_version=17, do_constant_folding=True)
    print(f"export_s={time.perf_counter() - t0:.3f}")


if __name__ == "__main__":
    main()
