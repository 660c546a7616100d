"""bench/ort_profile: where ONNX Runtime's time goes, to set next to `tonnx run --profile`.

    ORT_PROFILE=/tmp/ortp node tools/ort_run.js M.onnx --test-data D --repeat 100 --threads 2
    /usr/bin/python3 bench/ort_profile.py /tmp/ortp_*.json

tools/ort_run.js writes ONNX Runtime's profile (a Chrome trace) when ORT_PROFILE names a
file prefix. This prints, per run, the kernel time of each op type (ONNX Runtime's ops after
its graph optimizations: it turns BatchNormalization into a convolution in its NCHWc layout,
for example) and of each op type by output plane (H x W), the runs that include the warm-up.
"""
import collections
import json
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    try:
        with open(sys.argv[1]) as f:
            events = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"{sys.argv[1]}: cannot read it as ONNX Runtime's profile (a JSON trace): {e}")
    if not isinstance(events, list):
        sys.exit(f"{sys.argv[1]}: not ONNX Runtime's profile (a JSON list of trace events)")
    runs = sum(1 for e in events if isinstance(e, dict) and e.get("name") == "model_run")
    if runs == 0:
        sys.exit(f"{sys.argv[1]}: no model_run events (is it ONNX Runtime's profile?)")
    by_op, by_plane, count = collections.defaultdict(float), collections.defaultdict(float), collections.Counter()
    for e in events:
        if not isinstance(e, dict) or e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        op = e["args"]["op_name"]
        shapes = e["args"].get("output_type_shape") or [{}]
        dims = next(iter(shapes[0].values()), [])
        by_op[op] += e["dur"]
        count[op] += 1
        by_plane[(op, "x".join(map(str, dims[2:4])) if len(dims) >= 4 else "-")] += e["dur"]
    total = sum(by_op.values())
    print(f"{runs} runs, {total / runs / 1000:.3f} ms per run in kernels")
    for op, us in sorted(by_op.items(), key=lambda kv: -kv[1]):
        print(f"  {op} x{count[op] // runs}: {us / runs / 1000:.3f} ms ({100 * us / total:.1f}%)")
    print("by output plane:")
    for (op, plane), us in sorted(by_plane.items(), key=lambda kv: -kv[1]):
        print(f"  {op} {plane}: {us / runs / 1000:.3f} ms")


if __name__ == "__main__":
    main()
