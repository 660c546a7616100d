"""bench/external_data: a model over 2 GB (issue 14's anchor: nn.TransformerEncoder, d_model
2048, 16 heads, 16 layers, ff 8192, sequence 128; 805M parameters, 3.2 GB), in one run:

  * export time and peak RSS (wait4) of `tonnx export transformer_encoder --external-data`
    (LibTorch's C++ twin) and of Python torch.onnx 1.13 on the Python model;
  * the same model traced in Python and saved as TorchScript, exported by `tonnx export X.pt`;
  * prepare time and peak RSS of tonnx's backend on tonnx's file (`tonnx run`) and ONNX
    Runtime's session creation on it (tools/ort_run.js), both checked against LibTorch.

Usage: /usr/bin/python3 bench/external_data.py [build-dir] [--model transformer_encoder_small]
Needs about 14 GB of disk (three copies of the weights) and 10 GB of memory.
Goals: tonnx time <= 0.2x torch.onnx; tonnx peak RSS <= model bytes + 300 MB.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from export import run  # noqa: E402  (output and peak RSS of a command)

SHAPES = {"transformer_encoder": "128x1x2048", "transformer_encoder_small": "16x1x256"}


def number(pattern, text):
    m = re.search(pattern, text)
    if not m:
        raise RuntimeError(f"no {pattern!r} in:\n{text}")
    return float(m.group(1))


TRACE = r'''
import sys, torch
sys.path.insert(0, sys.argv[1])
from torch_export import build
from onnx import numpy_helper
torch.manual_seed(0)
model = build(sys.argv[2])
x = torch.randn(*[int(d) for d in sys.argv[3].split("x")])
with torch.no_grad():
    torch.jit.trace(model, (x,)).save(sys.argv[4] + "/model.pt")
with open(sys.argv[4] + "/x.pb", "wb") as f:
    f.write(numpy_helper.from_array(x.numpy(), "x").SerializeToString())
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model", default="transformer_encoder")
    a = ap.parse_args()
    tonnx = os.path.join(a.build, "tonnx")
    name, shape = a.model, SHAPES[a.model]
    tmp = tempfile.mkdtemp(prefix="tonnx_bench_ext_", dir=os.environ.get("TMPDIR", "/var/tmp"))
    try:
        rows = []
        out, rss = run([tonnx, "export", name, "-o", f"{tmp}/t.onnx", "--external-data",
                        "--test-data", f"{tmp}/data"])
        t_tonnx = number(r"bytes, ([0-9.e-]+) s\)", out)
        model_mb = number(r"external data \S+ \(([0-9]+) bytes\)", out) / 2**20
        os.makedirs(f"{tmp}/torch")  # torch.onnx writes one file per tensor beside the model
        out_t, rss_t = run(["/usr/bin/python3", os.path.join(ROOT, "bench", "torch_export.py"), name,
                            shape, f"{tmp}/torch/m.onnx"])
        t_torch = number(r"export_s=([0-9.]+)", out_t)
        files_torch = len(os.listdir(f"{tmp}/torch"))
        print(f"model {name}: {model_mb:.0f} MB of weights; torch.onnx wrote {files_torch} files, "
              f"tonnx 2 (model and data)")
        rows.append(("tonnx export (C++ model)", t_tonnx, rss, t_tonnx / t_torch))
        rows.append(("torch.onnx 1.13 export", t_torch, rss_t, 1.0))
        shutil.rmtree(f"{tmp}/torch")

        os.makedirs(f"{tmp}/pt")
        run(["/usr/bin/python3", "-c", TRACE, os.path.join(ROOT, "bench"), name, shape, f"{tmp}/pt"])
        out_p, rss_p = run([tonnx, "export", f"{tmp}/pt/model.pt", "-o", f"{tmp}/pt/m.onnx",
                            "--inputs", f"{tmp}/pt/x.pb", "--external-data"])
        t_pt = number(r"bytes, ([0-9.e-]+) s\)", out_p)
        rows.append(("tonnx export (.pt traced in Python)", t_pt, rss_p, t_pt / t_torch))
        shutil.rmtree(f"{tmp}/pt")

        print(f"{'export':38} {'seconds':>8} {'peak_MB':>8} {'RSS-model_MB':>12} {'time/torch':>10}")
        for what, t, r, ratio in rows:
            print(f"{what:38} {t:8.2f} {r:8.0f} {r - model_mb:12.0f} {ratio:10.2f}")

        out_r, rss_r = run([tonnx, "run", f"{tmp}/t.onnx", "--test-data", f"{tmp}/data"])
        out_o, rss_o = run(["node", os.path.join(ROOT, "tools", "ort_run.js"), f"{tmp}/t.onnx",
                            "--test-data", f"{tmp}/data"])
        print(f"{'prepare + one run (tonnx file)':38} {'prep_ms':>8} {'peak_MB':>8} {'RSS-model_MB':>12}")
        p_t = number(r"prepare_ms=([0-9.]+)", out_r)
        p_o = number(r"ort_prepare_ms=([0-9.]+)", out_o)
        print(f"{'tonnx backend':38} {p_t:8.0f} {rss_r:8.0f} {rss_r - model_mb:12.0f}")
        print(f"{'ONNX Runtime':38} {p_o:8.0f} {rss_o:8.0f} {rss_o - model_mb:12.0f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
