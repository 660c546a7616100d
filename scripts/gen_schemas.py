#!/usr/bin/env python3
"""Writes src/ir/schemas_18_23.cpp: the operator schemas of ai.onnx opsets 18 to 23, as data.

Debian 12's libonnx (1.12) knows the schemas up to opset 17. The facts of the later ones (each
op-version's inputs and which are optional or variadic, its outputs, its attributes with their
types and whether they are required) are read from ONNX's own specification, docs/Changelog.md
of the ONNX repository (github.com/onnx/onnx), and written as one table. Usage:

    python3 scripts/gen_schemas.py PATH/TO/onnx/docs/Changelog.md > src/ir/schemas_18_23.cpp

TYPES_ONLY below is written by hand, from the same Changelog: the versions whose change is only
in the element types they accept (float8, int4, float4, bfloat16, strings): a kernel that
implements the version before runs them for the types it knows, and refuses the others by type.
"""
import html
import re
import sys

FIRST, LAST = 18, 23

# op -> versions whose only change is the element types accepted (see the docstring).
TYPES_ONLY = {
    # 19: float8 types (Cast's and QuantizeLinear's `saturate` applies to float8 targets only),
    # strings for Equal.
    "Cast": {19, 21, 23}, "CastLike": {19, 21, 23}, "Constant": {19, 21, 23},
    "DequantizeLinear": {19}, "QuantizeLinear": {19}, "Equal": {19},
    "Identity": {19, 21, 23}, "If": {19, 21, 23}, "Loop": {19, 21, 23}, "Scan": {19, 21, 23},
    "Reshape": {19, 21, 23}, "Shape": {19, 21, 23}, "Size": {19, 21, 23},
    # 20: float8 for ConstantOfShape, IsInf, IsNaN; bool for ReduceMax and ReduceMin.
    "ConstantOfShape": {20, 21, 23}, "IsInf": {20}, "IsNaN": {20}, "ReduceMax": {20},
    "ReduceMin": {20},
    # 21 and 23: int4/uint4, then float4e2m1.
    "Flatten": {21, 23}, "Pad": {21, 23}, "Squeeze": {21, 23}, "Transpose": {21, 23},
    "Unsqueeze": {21, 23}, "QLinearMatMul": {21},
    # 22: bfloat16 for these (not AveragePool and MaxPool: 22 also drops the windows that
    # start in the end pad). Not Quantize/DequantizeLinear-23 either (precision, output_dtype).
    **{op: {22} for op in (
        "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Bernoulli", "Conv",
        "ConvTranspose", "Cos", "Cosh", "DeformConv", "Det", "Dropout", "Elu", "EyeLike", "GRU",
        "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool", "GridSample", "HardSigmoid",
        "HardSwish", "InstanceNormalization", "LSTM", "LpNormalization", "LpPool",
        "MaxRoiPool", "MaxUnpool", "Mish", "Multinomial", "NegativeLogLikelihoodLoss", "RNN",
        "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "RoiAlign",
        "Round", "Selu", "Sin", "Sinh", "Softplus", "Softsign", "Tan", "ThresholdedRelu")},
}

ATTR_TYPES = {"int": "Int", "float": "Float", "string": "String", "tensor": "Tensor",
              "graph": "Graph", "list of ints": "Ints", "list of floats": "Floats",
              "list of strings": "Strings", "sparse_tensor": "SparseTensor",
              "type_proto": "TypeProto", "list of graphs": "Graphs", "list of tensors": "Tensors"}


def sections(text):
    """(version, op, body) for each op section of the default domain's opsets FIRST..LAST."""
    parts = re.split(r"^## Version (\d+) of the (.*?) operator set$", text, flags=re.M)
    for i in range(1, len(parts), 3):
        version, domain, body = int(parts[i]), parts[i + 1], parts[i + 2]
        if domain != "default ONNX" or not FIRST <= version <= LAST:
            continue
        ops = re.split(r'^### <a name="([A-Za-z0-9_]+)-(\d+)"></a>', body, flags=re.M)
        for j in range(1, len(ops), 3):
            assert int(ops[j + 1]) == version, (ops[j], ops[j + 1], version)
            yield version, ops[j], ops[j + 2]


def block(body, title):
    m = re.search(r"^#### " + title + r"(?: \((\d+)(?: - (\d+|&#8734;))?\))?\n\n<dl>\n(.*?)</dl>",
                  body, flags=re.M | re.S)
    if not m:
        return None, None, []
    items = re.findall(r"<dt><tt>([^<]+)</tt>(?: \(([^)]*)\))?\s*:\s*([^<]*?)</dt>", m.group(3))
    lo = int(m.group(1)) if m.group(1) else None
    hi = m.group(2)
    hi = "INT_MAX" if hi == "&#8734;" else (int(hi) if hi else lo)
    return lo, hi, items


def parse(version, op, body):
    _, _, attrs = block(body, "Attributes")
    a = []
    for name, _, rest in attrs:
        rest = html.unescape(rest).strip()
        m = re.match(r"(list of \w+|\w+)(?:\s*\((.*)\))?", rest)
        kind = ATTR_TYPES[m.group(1)]
        required = m.group(2) == "required"
        a.append((name, kind, required))
    io = []
    for title in ("Inputs", "Outputs"):
        lo, hi, items = block(body, title)
        formals = [(name, "optional" in (flags or ""), "variadic" in (flags or ""))
                   for name, flags, _ in items]
        if lo is None:  # no count given: every formal, all required
            lo = hi = len(formals)
        io.append((lo, hi, formals))
    deprecated = bool(re.match(r"\*\*[A-Za-z0-9_]+-\d+\*\* \(deprecated\)", body))
    return {"op": op, "since": version, "inputs": io[0], "outputs": io[1], "attrs": a,
            "types_only": version in TYPES_ONLY.get(op, ()), "deprecated": deprecated}


def cpp(s):
    f = lambda formals: "{" + ", ".join(f'{{"{n}", {str(o).lower()}, {str(v).lower()}}}'
                                        for n, o, v in formals) + "}"
    (ilo, ihi, ins), (olo, ohi, outs) = s["inputs"], s["outputs"]
    attrs = "{" + ", ".join(f'{{"{n}", A::{k}, {str(r).lower()}}}' for n, k, r in s["attrs"]) + "}"
    return (f'  {{"{s["op"]}", {s["since"]}, {str(s["types_only"]).lower()}, '
            f'{str(s["deprecated"]).lower()}, {ilo}, {ihi}, {f(ins)}, {olo}, {ohi}, {f(outs)}, {attrs}}},')


def main():
    text = open(sys.argv[1], encoding="utf-8").read()
    rows = [parse(*s) for s in sections(text)]
    known = {(r["op"], r["since"]) for r in rows}
    for op, versions in TYPES_ONLY.items():
        for v in versions:
            assert (op, v) in known, f"TYPES_ONLY names {op}-{v}, which the Changelog does not define"
    print("// Generated by scripts/gen_schemas.py from ONNX's docs/Changelog.md: do not edit. The")
    print("// schemas of ai.onnx opsets 18 to 23 (Debian's libonnx knows up to 17): see schemas.h.")
    print('#include "ir/schemas.h"')
    print()
    print("#include <climits>")
    print("#include <iterator>")
    print()
    print("namespace tonnx::ir {")
    print()
    print("namespace {")
    print()
    print("using A = OpSchemaData::AttrType;")
    print("// One op-version per line.")
    print("// clang-format off")
    print("const OpSchemaData kTable[] = {")
    for r in sorted(rows, key=lambda r: (r["op"], r["since"])):
        print(cpp(r))
    print("};")
    print("// clang-format on")
    print()
    print("}  // namespace")
    print()
    print("const std::vector<OpSchemaData>& schemas_18_23() {")
    print("  static const std::vector<OpSchemaData> table(std::begin(kTable), std::end(kTable));")
    print("  return table;")
    print("}")
    print()
    print("}  // namespace tonnx::ir")


if __name__ == "__main__":
    main()
