"""bench/backend: latency of tonnx's backend next to ONNX Runtime and LibTorch eager.

For each zoo model: export with tonnx (batch 1 where the zoo default is larger), then the
median of --repeat runs after a warm-up, and prepare time, at 1 and 2 threads, in one run:
    /usr/bin/python3 bench/backend.py [build-dir] [model ...]
Prints ratios tonnx/eager and tonnx/ORT. The goal of issue 4: no model slower than eager.
The `dnn_ms` column is tonnx with `--onednn-conv` (Conv on oneDNN in channels-last layout,
opt-in because it rounds differently from LibTorch); `-` for models without Conv.
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = ["alexnet", "resnet18", "resnet50", "vgg16", "densenet121", "inception_v3", "dcgan_generator",
           "super_resolution", "word_language_model"]
BATCH1 = {"alexnet": "1x3x224x224"}
HAS_CONV = set(DEFAULT) - {"word_language_model"}


def run(cmd):
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stdout}")
    return out.stdout


def num(pattern, text):
    return float(re.search(pattern, text).group(1))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    names = sys.argv[2:] or DEFAULT
    tmp = tempfile.mkdtemp(prefix="tonnx_bench_backend_")
    repeat = "20"
    print(f"{'model':22} {'thr':>3} {'eager_ms':>9} {'tonnx_ms':>9} {'ort_ms':>8} {'tonnx/eager':>11} "
          f"{'tonnx/ort':>9} {'dnn_ms':>8} {'dnn/ort':>7} {'prepare_ms':>10} {'ort_prep_ms':>11}")
    for name in names:
        path, data = f"{tmp}/{name}.onnx", f"{tmp}/{name}_data"
        cmd = [os.path.join(build, "tonnx"), "export", name, "-o", path, "--test-data", data]
        if name in BATCH1:
            cmd += ["--input-shape", BATCH1[name]]
        run(cmd)
        for threads in ("1", "2"):
            eager_cmd = [os.path.join(build, "bench_eager"), name, "--threads", threads, "--repeat", repeat]
            if name in BATCH1:
                eager_cmd += ["--input-shape", BATCH1[name]]
            eager = num(r"eager_median_ms=([0-9.]+)", run(eager_cmd))
            # Accuracy is the tests' business; a loose tolerance keeps multi-threaded float noise from aborting.
            tcmd = [os.path.join(build, "tonnx"), "run", path, "--test-data", data, "--repeat", repeat, "--threads",
                    threads, "--rtol", "1e-2", "--atol", "1e-3"]
            t = run(tcmd)
            dnn = num(r"median_ms=([0-9.]+)", run(tcmd + ["--onednn-conv"])) if name in HAS_CONV else 0
            o = run(["node", os.path.join(ROOT, "tools", "ort_run.js"), path, "--test-data", data, "--repeat", repeat, "--rtol", "1e-2", "--atol", "1e-3",
                     "--threads", threads])
            tm, prep = num(r"median_ms=([0-9.]+)", t), num(r"prepare_ms=([0-9.e-]+)", t)
            om, oprep = num(r"ort_median_ms=([0-9.]+)", o), num(r"ort_prepare_ms=([0-9.]+)", o)
            e = f"{eager:9.2f}" if eager else f"{'-':>9}"
            r = f"{tm / eager:11.2f}" if eager else f"{'-':>11}"
            d = f"{dnn:8.2f} {dnn / om:7.2f}" if dnn else f"{'-':>8} {'-':>7}"
            print(f"{name:22} {threads:>3} {e} {tm:9.2f} {om:8.2f} {r} {tm / om:9.2f} {d} {prep:10.1f} {oprep:11.1f}",
                  flush=True)
        for f in (path,):
            os.remove(f)


if __name__ == "__main__":
    main()
