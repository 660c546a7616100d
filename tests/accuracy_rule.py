#!/usr/bin/python3
"""The backend's accuracy rule for whole models (docs/backend.md, "Accuracy").

Each float output of tonnx's backend is compared with the float64 reference (the model run in
double by LibTorch), as ONNX Runtime's and LibTorch-float32's outputs are: its error may be at
most twice the larger of theirs, by the largest absolute error relative to the reference's
largest magnitude and by the RMS error relative to the reference's RMS. (A floor of 2^-22, two
float32 ulps at 1, stands in where both are exact.) Integer and bool outputs must equal
LibTorch's. Random-weight models have logits up to 6e4: a per-element tolerance against
float32 measures luck, this measures accuracy.

usage: accuracy_rule.py REFERENCE_DIR LIBTORCH_SET_DIR TONNX_DIR ORT_DIR
Each holds output_K.pb (TensorProto). Prints one line per output; exit 1 when tonnx's breaks
the rule, 2 on missing or mismatched files.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, numpy_helper

FLOOR = 2.0 ** -22


def load(d, k):
    p = os.path.join(d, "output_%d.pb" % k)
    t = TensorProto()
    with open(p, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def errors(got, ref):
    diff = got.astype(np.float64) - ref
    scale = max(float(np.max(np.abs(ref))), 1e-30)
    rms = max(float(np.sqrt(np.mean(ref * ref))), 1e-30)
    if not np.all(np.isfinite(got) == np.isfinite(ref)):
        return float("inf"), float("inf")
    finite = np.isfinite(ref)
    if not np.array_equal(got[~finite], ref[~finite].astype(got.dtype)):
        return float("inf"), float("inf")
    diff = np.where(finite, diff, 0.0)
    return float(np.max(np.abs(diff))) / scale, float(np.sqrt(np.mean(diff * diff))) / rms


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    ref_dir, lt_dir, tonnx_dir, ort_dir = sys.argv[1:]
    n = len([f for f in os.listdir(ref_dir) if f.startswith("output_")])
    if n == 0:
        print("accuracy rule: no output_K.pb in %s" % ref_dir)
        return 2
    ok = True
    for k in range(n):
        ref = load(ref_dir, k)
        outs = {name: load(d, k) for name, d in
                (("libtorch", lt_dir), ("tonnx", tonnx_dir), ("ort", ort_dir))}
        for name, a in outs.items():
            if a.shape != ref.shape:
                print("output %d: %s's shape %s is not the reference's %s" % (k, name, a.shape,
                                                                                ref.shape))
                return 2
        if not np.issubdtype(ref.dtype, np.floating):
            good = np.array_equal(outs["tonnx"], outs["libtorch"])
            print("output %d (%s): tonnx %s LibTorch" % (k, ref.dtype, "equals" if good else
                                                         "DIFFERS from"))
            ok = ok and good
            continue
        e = {name: errors(a, ref) for name, a in outs.items()}
        bound = [max(2 * max(e["ort"][i], e["libtorch"][i]), FLOOR) for i in range(2)]
        good = all(e["tonnx"][i] <= bound[i] for i in range(2))
        print("output %d: max-abs/max|ref| tonnx %.3g ort %.3g libtorch-f32 %.3g (bound %.3g); "
              "rms/rms(ref) tonnx %.3g ort %.3g libtorch-f32 %.3g (bound %.3g): %s"
              % (k, e["tonnx"][0], e["ort"][0], e["libtorch"][0], bound[0], e["tonnx"][1],
                 e["ort"][1], e["libtorch"][1], bound[1], "pass" if good else "FAIL"))
        ok = ok and good
    print("accuracy rule: %s" % ("pass" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
