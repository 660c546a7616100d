#!/usr/bin/python3
"""Parity with torch.onnx 1.13 (ctest torch_onnx_parity): every op torch.onnx registers a
symbolic for has a tonnx symbolic from the same opset (within tonnx's 9..17), or a line in
tests/torch_onnx_parity.tsv that says why not:

  cannot-apply  the op has no meaning for tonnx (torch.onnx internals, Caffe2-only exports)
  converter     tonnx handles it outside the symbolic registry (the converter, the TorchScript
                loader); the reason names where
  missing       not implemented yet: the list only shrinks (a listed op that gains a symbolic
                fails this test until its line is removed)
  opset         tonnx's first opset is later than torch.onnx's; the reason says why

torch.onnx's registry is read from /usr/bin/python3 (Debian's python3-torch) at test time;
tonnx's from `tonnx symbolics`. torch.onnx names a dunder op's function with one trailing
underscore (aten::__and_ for aten::__and__); both spellings match.

Usage: parity_test.py BUILD_DIR SOURCE_DIR
"""
import subprocess
import sys

import torch.onnx  # noqa: F401  (registers torch.onnx's symbolics)
from torch.onnx._internal import registration

STATUSES = ("cannot-apply", "converter", "missing", "opset")


def torch_ops():
    ops = {}
    for name in registration.registry.all_functions():
        base = registration.registry.get_function_group(name)._functions._base
        if base:
            ops[name] = min(base)
    return ops


def tonnx_ops(build):
    out = subprocess.run([f"{build}/tonnx", "symbolics"], check=True, capture_output=True,
                         text=True).stdout
    ops = {}
    for line in out.splitlines():
        name, opset = line.split("\t")[:2]
        ops[name] = min(ops.get(name, 99), int(opset))
    return ops


def read_list(path):
    entries = {}
    for n, line in enumerate(open(path), 1):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 3 or parts[1] not in STATUSES or not parts[2].strip():
            sys.exit(f"{path}:{n}: expected OP<TAB>{'|'.join(STATUSES)}<TAB>REASON: {line!r}")
        if parts[0] in entries:
            sys.exit(f"{path}:{n}: {parts[0]} is listed twice")
        entries[parts[0]] = (parts[1], parts[2])
    return entries


def in_place(name):
    return name.endswith("_") and not name.endswith("__")


def main():
    build, source = sys.argv[1], sys.argv[2]
    path = f"{source}/tests/torch_onnx_parity.tsv"
    theirs, ours, listed = torch_ops(), tonnx_ops(build), read_list(path)

    def ours_for(name):
        if name in ours:
            return name
        if name.endswith("_") and name + "_" in ours:  # aten::__and_ is aten::__and__
            return name + "_"
        # An in-place op (dropout_) is served by its out-of-place symbolic once the
        # functionalization pass has turned the write into a new value (registry.cpp).
        if in_place(name) and name[:-1] in ours:
            return name[:-1]
        return None

    errors, counts = [], {s: 0 for s in STATUSES}
    counts["symbolic"] = 0
    for name, first in sorted(theirs.items()):
        mine = ours_for(name)
        entry = listed.get(name)
        if mine is None:
            if entry is None:
                errors.append(f"{name} (torch.onnx from opset {first}) has no tonnx symbolic and "
                              f"no line in tests/torch_onnx_parity.tsv")
            elif entry[0] == "opset":
                errors.append(f"{name} is listed as 'opset' but tonnx has no symbolic for it")
            else:
                counts[entry[0]] += 1
            continue
        if entry is not None and entry[0] == "missing":
            errors.append(f"{name} now has a tonnx symbolic (from opset {ours[mine]}): remove its "
                          f"'missing' line from tests/torch_onnx_parity.tsv")
            continue
        later = ours[mine] > max(first, 9)
        if entry is not None and entry[0] == "opset":
            if later:
                counts["opset"] += 1
            else:
                errors.append(f"{name} now has a tonnx symbolic from opset {ours[mine]}: remove "
                              f"its 'opset' line from tests/torch_onnx_parity.tsv")
            continue
        if entry is not None:
            errors.append(f"{name} has a tonnx symbolic but is listed as '{entry[0]}'")
            continue
        if later:
            errors.append(f"{name}: torch.onnx exports it from opset {first}, tonnx only from "
                          f"{ours[mine]} (add a symbolic for the earlier opsets, or an 'opset' "
                          f"line with the reason)")
            continue
        counts["symbolic"] += 1
    for name in sorted(set(listed) - set(theirs)):
        errors.append(f"{name} is listed but torch.onnx registers no symbolic for it")

    print(f"torch.onnx 1.13 registers {len(theirs)} ops: {counts['symbolic']} have tonnx "
          f"symbolics, {counts['converter']} are handled by tonnx's converter or loader, "
          f"{counts['opset']} start at a later opset, {counts['cannot-apply']} cannot apply, "
          f"{counts['missing']} are missing")
    for e in errors:
        print("parity:", e)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
