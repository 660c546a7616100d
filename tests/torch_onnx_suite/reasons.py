#!/usr/bin/env python3
"""Counts the cases tonnx fails where torch.onnx passes, by reason, from the expected-failure
lists (expected_trace17.tsv, expected_script17.tsv): the table in docs/torch_onnx_suite.md.

    tests/torch_onnx_suite/reasons.py [DIR]

A case's reason is its first error line; the first rule below whose pattern matches it (or
the case name, for quantization) decides its row. Cases marked '[torch.onnx fails too]' are
left out.
"""
import os
import re
import sys

RULES = [
    ("quantized tensors", r"QUInt|QInt|quantiz|^test_qat|^test_quantized"),
    ("graph inputs differ", r"too many positional inputs|inputs for a model with|runner: cannot"
                            r"|example input \d+ .* is List"),
    ("results differ", r"not close|do not match"),
    ("ONNX's checker or shape inference rejects the model", r"does not pass ONNX's checks"),
    ("TorchScript module features", r"uses self in|prim::SetAttr|writes self"),
    ("a missing symbolic", r"no symbolic function|have no symbolic function"),
    ("a symbolic refuses the case", r"ONNX export failed at|dynamic_axes:"),
    ("other", r""),
]


def classify(name, reason):
    for label, pattern in RULES:
        if re.search(pattern, name + "\t" + reason):
            return label
    return "other"


def count(path):
    counts = {label: 0 for label, _ in RULES}
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, _, reason = line.rstrip("\n").partition("\t")
            if reason.startswith("[torch.onnx fails too]"):
                continue
            counts[classify(name, reason)] += 1
    return counts


def main():
    here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    trace = count(os.path.join(here, "expected_trace17.tsv"))
    script = count(os.path.join(here, "expected_script17.tsv"))
    print("| reason | traced | scripted |")
    print("|---|---|---|")
    for label, _ in RULES:
        print("| %s | %d | %d |" % (label, trace[label], script[label]))
    print("| total | %d | %d |" % (sum(trace.values()), sum(script.values())))


if __name__ == "__main__":
    main()
