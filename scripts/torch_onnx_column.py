#!/usr/bin/python3
"""Adds torch.onnx 1.13's support to the symbolic table of `tonnx symbolics --markdown`.

Reads the markdown on stdin and writes it to stdout with a column "torch.onnx 1.13 from
opset" on the symbolic table (read from Debian's python3-torch registry), followed by a table
of the ops torch.onnx exports that have no tonnx symbolic, with the status and reason from
tests/torch_onnx_parity.tsv. Used by scripts/gen_docs.sh and tests/docs_test.sh.

Usage: torch_onnx_column.py PARITY_TSV < symbolics.md > operators.md
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from parity_test import read_list, torch_ops  # noqa: E402  (torch.onnx's registry, the list)


def main():
    theirs = torch_ops()
    listed = read_list(sys.argv[1])
    lines = sys.stdin.read().split("\n")
    out, ours, in_table = [], set(), False
    for line in lines:
        if line.startswith("| op | registered since opset |"):
            in_table = True
            out.append(line + " torch.onnx 1.13 from opset |")
            continue
        if in_table and line.startswith("|---"):
            out.append(line + "---|")
            continue
        if in_table and line.startswith("| `"):
            op = line.split("`")[1]
            ours.add(op)
            first = theirs.get(op, theirs.get(op[:-1]) if op.endswith("__") else None)
            out.append(line + " %s |" % (first if first is not None else "—"))
            continue
        if in_table and not line.startswith("|"):
            in_table = False
            rest = [op for op in sorted(theirs) if op not in ours and op + "_" not in ours
                    and not (op.endswith("_") and not op.endswith("__") and op[:-1] in ours)]
            out.append("")
            out.append("torch.onnx 1.13 registers symbolics for %d ops; these %d have no tonnx "
                       "symbolic (status and reason from `tests/torch_onnx_parity.tsv`):"
                       % (len(theirs), len(rest)))
            out.append("")
            out.append("| op | torch.onnx 1.13 from opset | status | reason |")
            out.append("|---|---|---|---|")
            for op in rest:
                status, reason = listed.get(op, ("?", "not listed"))
                out.append("| `%s` | %d | %s | %s |" % (op, theirs[op], status,
                                                       reason.replace("|", "\\|")))
        out.append(line)
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main()
