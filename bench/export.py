"""bench/export: tonnx export time and peak RSS next to Python torch.onnx, in one run.

For each zoo model, runs `build/tonnx export` and torch.onnx on its PyTorch twin, each in
its own process (peak RSS from wait4), and prints the ratios. Usage:
    /usr/bin/python3 bench/export.py [build-dir] [model ...]
Each side runs ROUNDS times (environment BENCH_ROUNDS, default 5), the two sides taking
turns, and the ratio is of the medians, as bench/backend.py does: one export of a small
model takes 15-30 ms, and on a shared VM one write of 11 MB into the page cache alone
varies 3-100 ms. The tonnx column's range is the fastest and slowest turn; the RSS
columns are the largest of the turns.
Targets: tonnx time <= 0.2x torch.onnx; peak RSS <= model bytes + 300 MB.
"""
import os
import statistics
import re
import subprocess
import sys
import tempfile

ROUNDS = max(1, int(os.environ.get("BENCH_ROUNDS", "5")))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = {  # zoo name -> (torchvision name, input shape)
    "alexnet": ("alexnet", "10x3x224x224"),
    "resnet18": ("resnet18", "1x3x224x224"),
    "resnet50": ("resnet50", "1x3x224x224"),
    "vgg11": ("vgg11", "1x3x224x224"),
    "vgg16": ("vgg16", "1x3x224x224"),
    "vgg16_bn": ("vgg16_bn", "1x3x224x224"),
    "densenet121": ("densenet121", "1x3x224x224"),
    "inception_v3": ("inception_v3", "1x3x299x299"),
    "dcgan_generator": ("dcgan_generator", "1x100x1x1"),
    "dcgan_discriminator": ("dcgan_discriminator", "1x3x64x64"),
    "super_resolution": ("super_resolution", "1x1x224x224"),
    "word_language_model": ("word_language_model", "35x20,2x20x200,2x20x200"),
    "word_language_model_gru": ("word_language_model_gru", "35x20,2x20x200"),
    "bert_base": ("bert_base", "1x128,1x128"),
    "gpt2_small": ("gpt2_small", "1x128"),
}


def run(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    _, status, usage = os.wait4(p.pid, 0)
    out = p.stdout.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out}")
    return out, usage.ru_maxrss / 1024.0  # MB


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    names = sys.argv[2:] or list(MODELS)
    tmp = tempfile.mkdtemp(prefix="tonnx_bench_")
    print(f"{'model':10} {'tonnx_s':>8} {'tonnx_range_s':>13} {'torch_s':>8} {'time_ratio':>10} "
          f"{'tonnx_rss_MB':>12} {'torch_rss_MB':>12} {'model_MB':>8} {'rss-model_MB':>12}  "
          f"(median of {ROUNDS} turns a side)")
    worst = (0.0, "")
    for name in names:
        tv, shape = MODELS[name]
        t_tonnx, t_torch, rss, rss_t = [], [], 0.0, 0.0
        for _ in range(ROUNDS):
            out, r = run([os.path.join(build, "tonnx"), "export", name, "-o", f"{tmp}/{name}.onnx",
                          "--input-shape", shape])
            t_tonnx.append(float(re.search(r"bytes, ([0-9.e-]+) s\)", out).group(1)))
            rss = max(rss, r)
            size_mb = os.path.getsize(f"{tmp}/{name}.onnx") / 2**20
            out_t, r = run(["/usr/bin/python3", os.path.join(ROOT, "bench", "torch_export.py"), tv,
                            shape, f"{tmp}/{name}_torch.onnx"])
            t_torch.append(float(re.search(r"export_s=([0-9.]+)", out_t).group(1)))
            rss_t = max(rss_t, r)
            for f in (f"{tmp}/{name}.onnx", f"{tmp}/{name}_torch.onnx"):
                if os.path.exists(f):
                    os.remove(f)
        mt, mp = statistics.median(t_tonnx), statistics.median(t_torch)
        worst = max(worst, (mt / mp, name))
        span = f"{min(t_tonnx):.3f}-{max(t_tonnx):.3f}"
        print(f"{name:10} {mt:8.3f} {span:>13} {mp:8.2f} {mt / mp:10.2f} {rss:12.0f} {rss_t:12.0f} "
              f"{size_mb:8.0f} {rss - size_mb:12.0f}", flush=True)
    print(f"worst time ratio: {worst[0]:.2f} ({worst[1]})")

if __name__ == "__main__":
    main()
