"""bench/export: tonnx export time and peak RSS next to Python torch.onnx, in one run.

For each zoo model, runs `build/tonnx export` and torch.onnx on its PyTorch twin, each in
its own process (peak RSS from wait4), and prints the ratios. Usage:
    /usr/bin/python3 bench/export.py [build-dir] [model ...]
Targets: tonnx time <= 0.2x torch.onnx; peak RSS <= model bytes + 300 MB.
"""
import os
import re
import subprocess
import sys
import tempfile

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
    print(f"{'model':10} {'tonnx_s':>8} {'torch_s':>8} {'time_ratio':>10} {'tonnx_rss_MB':>12} "
          f"{'torch_rss_MB':>12} {'model_MB':>8} {'rss-model_MB':>12}")
    for name in names:
        tv, shape = MODELS[name]
        out, rss = run([os.path.join(build, "tonnx"), "export", name, "-o", f"{tmp}/{name}.onnx",
                        "--input-shape", shape])
        t_tonnx = float(re.search(r"bytes, ([0-9.e-]+) s\)", out).group(1))
        size_mb = os.path.getsize(f"{tmp}/{name}.onnx") / 2**20
        out_t, rss_t = run(["/usr/bin/python3", os.path.join(ROOT, "bench", "torch_export.py"), tv, shape,
                            f"{tmp}/{name}_torch.onnx"])
        t_torch = float(re.search(r"export_s=([0-9.]+)", out_t).group(1))
        print(f"{name:10} {t_tonnx:8.2f} {t_torch:8.2f} {t_tonnx / t_torch:10.2f} {rss:12.0f} {rss_t:12.0f} "
              f"{size_mb:8.0f} {rss - size_mb:12.0f}", flush=True)
        for f in (f"{tmp}/{name}.onnx", f"{tmp}/{name}_torch.onnx"):
            if os.path.exists(f):
                os.remove(f)


if __name__ == "__main__":
    main()
