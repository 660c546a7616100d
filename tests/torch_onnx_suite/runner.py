#!/usr/bin/python3
"""torch.onnx 1.13.1's own ONNX Runtime suite, run with tonnx as the exporter.

The suite (test/onnx/test_pytorch_onnx_onnxruntime.py from Debian's pytorch source
package, fetched by fetch.sh, never copied into this repository) checks every case
through one helper, onnx_test_common.run_model_test -> torch.onnx.verification.verify:
export, run on ONNX Runtime, compare with torch at the test's tolerances. This runner
keeps that helper and replaces two things inside it:

  * the exporter: for the tonnx column, the module is traced (traced classes) or scripted
    (scripted classes) in Python, saved as .pt, its example inputs written as TensorProto
    files, and `tonnx export` writes the ONNX file with the class's opset and the test's
    export options; for the torch.onnx column, torch.onnx's own export runs unchanged;
  * the ONNX Runtime session: onnxruntime-node through tools/ort_serve.js (Debian has no
    Python onnxruntime), one server process per runner.

A case is applicable when it reaches the helper, torch itself runs the model, and it
exports only through the helper. Per case, per column: pass or the first line of what
failed. Results go to a CSV; with --expected the run fails when an applicable case fails
without being listed, or a listed case passes (the list only shrinks).

  /usr/bin/python3 runner.py --suite DIR/test/onnx --tonnx build/tonnx --opset 17 \
      --mode trace [--columns tonnx,torch] [--csv out.csv] [--expected FILE] [-k REGEX]
"""
import argparse
import atexit
import copy
import csv
import io
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import types
import unittest
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--suite", required=True, help="the extracted test/onnx folder")
    p.add_argument("--tonnx", default=os.path.join(ROOT, "build", "tonnx"))
    p.add_argument("--node-server", default=os.path.join(ROOT, "tools", "ort_serve.js"))
    p.add_argument("--opset", type=int, default=17)
    p.add_argument("--mode", choices=("trace", "script"), default="trace")
    p.add_argument("--keep-initializers-as-inputs", action="store_true")
    p.add_argument("--columns", default="tonnx", help="tonnx, torch or tonnx,torch")
    p.add_argument("--csv", help="write one row per case here")
    p.add_argument("--expected", help="expected-failures file: the run fails on any change")
    p.add_argument("-k", "--filter", help="only test names matching this regex")
    p.add_argument("--timeout", type=float, default=300, help="seconds per tonnx export")
    return p.parse_args()


ARGS = parse_args()
sys.argv = sys.argv[:1]  # common_utils parses the command line when imported
sys.path.insert(0, os.path.join(HERE, "shims"))
sys.path.insert(0, ARGS.suite)
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from torch.onnx import verification  # noqa: E402

torch.set_num_threads(1)
warnings.simplefilter("ignore")


class OrtServer:
    """One tools/ort_serve.js process; requests and answers are JSON lines."""

    def __init__(self, script):
        self.script = script
        self.proc = None

    def ask(self, request):
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(["node", self.script], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True)
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except OSError:
            line = ""
        if not line:
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("onnxruntime: the server (tools/ort_serve.js) died on this model")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError("onnxruntime: " + answer["error"])
        return answer


class TonnxBatch:
    """One `tonnx batch` process: LibTorch loads once, not once per case. Restarted after a
    crash or a timeout (the case counts as failed)."""

    def __init__(self, exe):
        self.exe = exe
        self.proc = None

    def run(self, argv, timeout):
        if any("\t" in a or "\n" in a for a in argv):
            raise RuntimeError("runner: an argument holds a tab or a newline")
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([self.exe, "batch"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            self.buf = b""
        self.proc.stdin.write(("\t".join(argv) + "\n").encode())
        self.proc.stdin.flush()
        deadline = time.time() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            marker = self.buf.find(b"\x1etonnx-batch exit ")
            end = self.buf.find(b"\n", marker) if marker >= 0 else -1
            if end >= 0:
                line = self.buf[marker:end].decode(errors="replace")
                self.buf = self.buf[end + 1 :]
                _, _, rc, text = line.split(" ", 3) if line.count(" ") >= 3 else (line.split(" ") + [""])[:4]
                return int(rc), text.replace("\x1f", "\n")
            left = deadline - time.time()
            ready, _, _ = select.select([fd], [], [], max(0.0, left))
            if not ready:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError("tonnx export: no answer in %g s" % timeout)
            chunk = os.read(fd, 65536)
            if not chunk:
                rc = self.proc.wait()
                raise RuntimeError("tonnx export: the process died (exit %d)" % rc)
            self.buf += chunk


SKIPPED = "\x00feed "
LAYOUT = None  # how the last tonnx export's example inputs become graph inputs (Layout)


class Layout:
    """What verification feeds for the example inputs of one export, and which of those values
    tonnx's graph inputs take. `kinds` has one entry per value fed: "skip" (a forward argument
    that is not a tensor: a constant of tonnx's export), "t" (a tensor), "q" (a quantized
    tensor: values, scale and zero point, three feeds), or an int n (a list of n tensors, fed
    as one list). Each tensor is one example input of tonnx (`positions`: for each graph input,
    the example input it takes, as `tonnx export` prints them; None: the first ones in order)."""

    def __init__(self, args, script):
        self.kinds = []
        for a in args:
            self._add(a, script)
        self.positions = None
        self.unused = 0  # example inputs the traced graph never reads (both exporters drop them)

    def _add(self, a, script):
        if isinstance(a, torch.Tensor):
            self.kinds.append("q" if a.is_quantized else "t")
        elif isinstance(a, tuple) and script:
            for e in a:  # verification flattens tuples
                self._add(e, script)
        elif isinstance(a, list) and a and all(isinstance(e, torch.Tensor) for e in a):
            self.kinds.append(len(a))
        else:
            self.kinds.append("skip")

    def feeds(self):
        return sum(3 if k == "q" else 1 for k in self.kinds)

    def graph_inputs(self, values):
        examples, i = [], 0
        for k in self.kinds:
            if k == "q":
                examples.append(list(values[i:i + 3]))
                i += 3
                continue
            v = values[i] if i < len(values) else None
            i += 1
            if k == "t":
                examples.append([v])
            elif isinstance(k, int):
                examples.extend([e] for e in v)
        if self.positions is None:
            return [v for e in examples for v in e]
        taken = [0] * len(examples)
        out = []
        for p in self.positions:
            out.append(examples[p][taken[p]])
            taken[p] += 1
        return out
SERVER = None
BATCH = None
EXPORTS = 0
WORK = tempfile.mkdtemp(prefix="tonnx-suite-")


def _torchvision_lib():
    """torchvision's op library (nms, roi_align, ...): the suite's models call its ops once
    torchvision is imported, and a tonnx user passes it with --load-library."""
    try:
        import glob
        import torchvision

        libs = glob.glob(os.path.join(os.path.dirname(torchvision.__file__), "_C*.so"))
        return libs[0] if libs else None
    except ImportError:
        return None


TORCHVISION_LIB = _torchvision_lib()
if not os.environ.get("TONNX_SUITE_KEEP"):  # keep the models and inputs for debugging
    atexit.register(shutil.rmtree, WORK, True)


class _Arg:
    def __init__(self, name):
        self.name = name


class NodeSession:
    """What verification needs of onnxruntime.InferenceSession: get_inputs() and run()."""

    counter = 0

    def __init__(self, model):
        NodeSession.counter += 1
        if not isinstance(model, str):
            path = os.path.join(WORK, "session_%d.onnx" % NodeSession.counter)
            with open(path, "wb") as f:
                f.write(model if isinstance(model, bytes) else model.getvalue())
            model = path
        self.model = model
        self.proto = onnx.load(model, load_external_data=False)
        self.sequences = [p for p, o in enumerate(self.proto.graph.output)
                          if o.type.HasField("sequence_type")]
        meta = SERVER.ask({"op": "load", "model": model})
        self.input_names = meta["inputs"]
        global LAYOUT
        self.layout, LAYOUT = (LAYOUT if COLUMN == "tonnx" else None), None

    def get_inputs(self):
        if self.layout is None:
            return [_Arg(n) for n in self.input_names]
        if self.layout.unused and STATE.remained is None:
            # The test feeds every example input, and the trace reads some not at all: neither
            # exporter's graph has them, and ONNX Runtime's session has that many fewer inputs
            # (test_all_optional_default_tensor asserts verification then raises).
            return [_Arg("%s%d" % (SKIPPED, k)) for k in range(self.layout.feeds() - self.layout.unused)]
        # tonnx: one name per value verification feeds (a quantized tensor is three feeds,
        # a forward argument that is not a tensor one that tonnx made a constant); run() maps
        # them to the graph's inputs.
        return [_Arg("%s%d" % (SKIPPED, k)) for k in range(self.layout.feeds())]

    def run(self, output_names, feeds, run_options=None):
        if self.layout is not None:
            names = list(self.input_names)
            # Without positions the graph takes the first example inputs, in order (the ones
            # after them not read, or the graph has no inputs at all).
            spread = self.layout.graph_inputs(list(feeds.values()))[: len(names)]
        else:
            # torch.onnx gives a list or tuple of tensors one sequence input; tonnx one input
            # per tensor: spread such a value over the following inputs when they exist.
            values = [(n, v) for n, v in feeds.items() if not n.startswith(SKIPPED)]
            spread = []
            names = list(self.input_names)
            for i, (name, value) in enumerate(values):
                remaining_feeds = len(values) - i - 1
                if isinstance(value, (list, tuple)) and len(names) - len(spread) - remaining_feeds >= len(value) > 1:
                    spread.extend(value)
                else:
                    spread.append(value)
        if len(spread) > len(names):
            raise RuntimeError("%d inputs for a model with %d" % (len(spread), len(names)))
        if not self.sequences:
            return self._run(self.model, names, spread)
        # onnxruntime-node returns tensors only: a sequence output is read as its length
        # (SequenceLength), then element by element (SequenceAt), and given back as a list,
        # as the Python onnxruntime returns it.
        lengths = self._run(self._reader(None), names, spread)
        outs = self._run(self._reader([int(lengths[p]) for p in self.sequences]), names, spread)
        result, k = [], 0
        for p in range(len(self.proto.graph.output)):
            if p in self.sequences:
                n = int(lengths[p])
                result.append(list(outs[k:k + n]))
                k += n
            else:
                result.append(outs[k])
                k += 1
        return result

    def _reader(self, lengths):
        """The model with each sequence output replaced by its length (lengths None) or by
        its `lengths[i]` elements."""
        m = onnx.ModelProto()
        m.CopyFrom(self.proto)
        outputs = list(m.graph.output)
        del m.graph.output[:]
        for p, out in enumerate(outputs):
            if p not in self.sequences:
                m.graph.output.append(out)
                continue
            if lengths is None:
                name = "__tonnx_len_%d" % p
                m.graph.node.append(onnx.helper.make_node("SequenceLength", [out.name], [name]))
                m.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.INT64, []))
                continue
            elem = out.type.sequence_type.elem_type.tensor_type.elem_type
            for i in range(lengths[self.sequences.index(p)]):
                idx, name = "__tonnx_idx_%d_%d" % (p, i), "__tonnx_at_%d_%d" % (p, i)
                m.graph.node.append(onnx.helper.make_node(
                    "Constant", [], [idx], value=onnx.helper.make_tensor(idx, onnx.TensorProto.INT64, [], [i])))
                m.graph.node.append(onnx.helper.make_node("SequenceAt", [out.name, idx], [name]))
                m.graph.output.append(onnx.helper.make_tensor_value_info(name, elem, None))
        NodeSession.counter += 1
        path = os.path.join(WORK, "session_%d_reader.onnx" % NodeSession.counter)
        onnx.save(m, path)
        SERVER.ask({"op": "load", "model": path})
        return path

    def _run(self, model, names, spread):
        request = {"op": "run", "model": model, "outdir": WORK, "feeds": []}
        if len(spread) > len(names):
            raise RuntimeError("%d inputs for a model with %d" % (len(spread), len(names)))
        for k, value in enumerate(spread):
            if isinstance(value, (list, tuple)):
                raise RuntimeError("input %s: a sequence (onnxruntime-node takes tensors only)" % names[k])
            arr = np.array(value, order="C")  # (ascontiguousarray makes 0-d arrays 1-d)
            dtype = "bool" if arr.dtype == np.bool_ else str(arr.dtype)
            path = os.path.join(WORK, "in_%d.bin" % k)
            arr.tofile(path)
            request["feeds"].append({"name": names[k], "dtype": dtype, "dims": list(arr.shape), "file": path})
        answer = SERVER.ask(request)
        outs = []
        for o in answer["outputs"]:
            dtype = np.bool_ if o["dtype"] == "bool" else np.dtype(o["dtype"])
            outs.append(np.fromfile(o["file"], dtype=dtype).reshape(o["dims"]))
        return outs


def install_fake_onnxruntime():
    mod = types.ModuleType("onnxruntime")
    mod.InferenceSession = lambda model, *a, **k: NodeSession(model)
    mod.SessionOptions = lambda: types.SimpleNamespace()
    mod.set_seed = lambda seed: None
    mod.__version__ = "node"
    sys.modules["onnxruntime"] = mod


install_fake_onnxruntime()
verification._ort_session = lambda model, providers=None: NodeSession(model)


class CaseState:
    def __init__(self):
        self.reached = False
        self.torch_failed = False
        self.direct_export = False
        self.remained = None  # the remained_onnx_input_idx of the last verification


STATE = CaseState()
COLUMN = "torch"


def tensor_file(t, name):
    """A tensor as a `tonnx export --inputs` item: a TensorProto file, or for a quantized tensor
    quantized(VALUES.pb,SCALE,ZERO_POINT)."""
    if t.is_quantized:
        if t.qscheme() != torch.per_tensor_affine:
            raise RuntimeError("runner: cannot pass a tensor quantized per channel")
        return "quantized(%s,%r,%d)" % (tensor_file(t.int_repr(), name), t.q_scale(), t.q_zero_point())
    path = os.path.join(WORK, name + ".pb")
    arr = t.detach().cpu().numpy()
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(arr).SerializeToString())
    return path


def script_arg(value, name):
    """One forward argument in `tonnx export --inputs` syntax."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, torch.Tensor):
        return tensor_file(value, name)
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value) and value:
            return "[" + ",".join(str(v) for v in value) + "]"
        if all(isinstance(v, torch.Tensor) for v in value):
            inner = ",".join(tensor_file(v, "%s_%d" % (name, i)) for i, v in enumerate(value))
            return ("[%s]" if isinstance(value, list) else "(%s)") % inner
        if isinstance(value, tuple):  # a tuple holds anything, nested tuples included
            return "(%s)" % ",".join(script_arg(v, "%s_%d" % (name, i)) for i, v in enumerate(value))
    raise RuntimeError("runner: cannot pass %s to tonnx export" % type(value).__name__)


class _Flat(torch.nn.Module):
    """Calls the model on the structure torch.onnx's tracer would rebuild from flat tensors."""

    def __init__(self, inner, desc, n_args, kw_names):
        super().__init__()
        self.inner = inner
        self.desc = desc
        self.n_args = n_args
        self.kw_names = kw_names

    def forward(self, *flat):
        rebuilt = torch._C._jit_unflatten(flat, self.desc)
        args, kwargs = rebuilt[: self.n_args], dict(zip(self.kw_names, rebuilt[self.n_args :]))
        out = self.inner(*args, **kwargs)
        return tuple(torch.jit._flatten(out)[0])


def tonnx_export(model, args, f, opset_version=None, do_constant_folding=True,
                 keep_initializers_as_inputs=None, dynamic_axes=None, input_names=None,
                 output_names=None, training=None, verbose=False, **_):
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    kwargs = {}
    if args and isinstance(args[-1], dict):
        kwargs, args = args[-1], args[:-1]
    global EXPORTS
    EXPORTS += 1
    tag = "export_%d" % EXPORTS
    pt = os.path.join(WORK, tag + ".pt")
    if isinstance(model, (torch.jit.ScriptModule, torch.jit.ScriptFunction)):
        if kwargs:
            raise RuntimeError("runner: keyword arguments to a scripted module")
        torch.jit.save(model, pt)
        inputs = [script_arg(a, "%s_in%d" % (tag, i)) for i, a in enumerate(args)]
        layout = Layout(args, script=True)
    else:
        kw_names = list(kwargs)
        flat, desc = torch.jit._flatten(tuple(args) + tuple(kwargs[k] for k in kw_names))
        wrapper = _Flat(model, desc, len(args), kw_names)
        from torch.onnx._globals import GLOBALS

        previous = GLOBALS.in_onnx_export
        GLOBALS.in_onnx_export = True
        try:
            with torch.no_grad():
                traced = torch.jit.trace(wrapper, tuple(flat), check_trace=False, strict=False)
        finally:
            GLOBALS.in_onnx_export = previous
        traced.save(pt)
        inputs = [tensor_file(t, "%s_in%d" % (tag, i)) for i, t in enumerate(flat)]
        layout = Layout(flat, script=False)
        layout.unused = sum(1 for v in list(traced.graph.inputs())[1:] if not v.uses())
    out = os.path.join(WORK, tag + ".onnx")
    cmd = [ARGS.tonnx, "export", pt, "-o", out, "--opset", str(opset_version or 17)]
    if TORCHVISION_LIB:  # the .pt may call torchvision::nms or roi_align, as a user passes it
        cmd += ["--load-library", TORCHVISION_LIB]
    if inputs:
        cmd += ["--inputs", ",".join(inputs)]
    if torch.get_default_dtype() != torch.float32:  # torch.onnx reads the process's default
        cmd += ["--default-dtype", str(torch.get_default_dtype()).replace("torch.", "")]
    if not do_constant_folding:
        cmd.append("--no-constant-folding")
    if keep_initializers_as_inputs:
        cmd.append("--keep-initializers-as-inputs")
    if training == torch.onnx.TrainingMode.TRAINING:
        cmd.append("--training")
    elif training == torch.onnx.TrainingMode.PRESERVE:
        cmd.append("--preserve-training-mode")
    if input_names:
        cmd += ["--input-names", ",".join(input_names)]
    if output_names:
        cmd += ["--output-names", ",".join(output_names)]
    if dynamic_axes:
        specs = []
        for name, axes in dynamic_axes.items():
            axes = list(axes.keys()) if isinstance(axes, dict) else list(axes)
            specs.append("%s:%s" % (name, ",".join(str(a) for a in axes)))
        cmd += ["--dynamic-axes", ";".join(specs)]
        # torch.onnx warns about a name that is neither an input nor an output and ignores it
        cmd.append("--ignore-unknown-dynamic-axes")
    rc, text = BATCH.run(cmd[1:], ARGS.timeout)
    if rc != 0:
        lines = [l for l in text.splitlines() if l.strip()] or ["exit %d" % rc]
        errors = [l for l in lines if "error" in l.lower()] or lines
        raise RuntimeError(errors[0].replace("tonnx export: error: ", "")[:300])
    positions = [int(m) for m in re.findall(r"^\s*input\s.*\(example input (\d+)\)$", text, re.M)]
    layout.positions = positions or None
    global LAYOUT
    LAYOUT = layout
    with open(out, "rb") as src:
        data = src.read()
    if isinstance(f, str):
        with open(f, "wb") as dst:
            dst.write(data)
    else:
        f.write(data)


class _UtilsForTonnx:
    """verification's `utils` with _export replaced by tonnx; the rest is torch.onnx.utils."""

    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        if name == "_export" and COLUMN == "tonnx":
            return tonnx_export
        return getattr(self._real, name)


verification.utils = _UtilsForTonnx(verification.utils)

_real_prepare_input_for_ort = verification._prepare_input_for_ort


def _prepare_input_for_ort(args, kwargs, remained_onnx_input_idx, flatten):
    """The test's remained_onnx_input_idx says which inputs torch.onnx's graph keeps; tonnx's
    export says which it keeps (Layout), so tonnx's model gets every input here."""
    STATE.remained = remained_onnx_input_idx
    if COLUMN == "tonnx":
        remained_onnx_input_idx = None
    return _real_prepare_input_for_ort(args, kwargs, remained_onnx_input_idx, flatten)


verification._prepare_input_for_ort = _prepare_input_for_ort

import onnx_test_common  # noqa: E402

_real_verify = verification.verify


def run_model_test(test_suite, *args, **kwargs):
    """The suite's helper, as onnx_test_common defines it, with a check that torch runs."""
    STATE.reached = True
    kwargs["ort_providers"] = ("CPUExecutionProvider",)
    kwargs["opset_version"] = test_suite.opset_version
    kwargs["keep_initializers_as_inputs"] = test_suite.keep_initializers_as_inputs
    if hasattr(test_suite, "check_shape"):
        kwargs["check_shape"] = test_suite.check_shape
    if hasattr(test_suite, "check_dtype"):
        kwargs["check_dtype"] = test_suite.check_dtype
    model = args[0] if args else kwargs["model"]
    input_args = args[1] if len(args) > 1 else kwargs.get("input_args")
    try:
        pt_args, pt_kwargs = verification._prepare_input_for_pytorch(input_args, kwargs.get("input_kwargs"))
        with torch.no_grad():
            copy.deepcopy(model)(*pt_args, **pt_kwargs)
    except Exception:
        STATE.torch_failed = True
        raise
    return _real_verify(*args, **kwargs)


onnx_test_common.run_model_test = run_model_test

_real_export = torch.onnx.export


def _direct_export(*a, **k):
    STATE.direct_export = True
    return _real_export(*a, **k)


torch.onnx.export = _direct_export

import test_pytorch_onnx_onnxruntime as suite  # noqa: E402


def first_line(text):
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    # the exception line is the last of a traceback; keep its first line
    for i in range(len(lines) - 1, -1, -1):
        if re.match(r"^[\w.]+(Error|Exception|Exit)\b|^[\w.]+: ", lines[i]) and not lines[i].startswith("File "):
            return lines[i][:300]
    return lines[-1][:300] if lines else "failed"


def run_case(cls, name, column):
    global COLUMN, STATE
    COLUMN = column
    STATE = CaseState()
    result = unittest.TestResult()
    # A test that fails half-way may leave torch's global settings changed (test_div_promotion
    # sets the default dtype to double and restores it only at its end).
    dtype, grad = torch.get_default_dtype(), torch.is_grad_enabled()
    try:
        cls(name).run(result)
    finally:
        torch.set_default_dtype(dtype)
        torch.set_grad_enabled(grad)
    if result.skipped:
        return "skip", result.skipped[0][1][:200]
    problems = result.errors + result.failures
    if not STATE.reached:
        return "n/a", "does not export through run_model_test"
    if STATE.torch_failed:
        return "n/a", "torch itself fails: " + (first_line(problems[0][1]) if problems else "")
    if STATE.direct_export:
        return "n/a", "also exports through torch.onnx.export directly"
    if problems:
        return "fail", first_line(problems[0][1])
    return "pass", ""


def main():
    is_script = ARGS.mode == "script"
    cls_name = "TestONNXRuntime_opset_version_%d_is_script_%s_keep_initializers_as_inputs_%s" % (
        ARGS.opset, is_script, bool(ARGS.keep_initializers_as_inputs))
    cls = getattr(suite, cls_name)
    names = unittest.TestLoader().getTestCaseNames(cls)
    if ARGS.filter:
        names = [n for n in names if re.search(ARGS.filter, n)]
    columns = [c.strip() for c in ARGS.columns.split(",")]
    global SERVER, BATCH
    SERVER = OrtServer(ARGS.node_server)
    BATCH = TonnxBatch(ARGS.tonnx)
    rows = []
    start = time.time()
    for i, name in enumerate(names):
        row = {"case": name}
        applicable = None
        for column in columns:
            status, why = run_case(cls, name, column)
            row[column] = status
            row[column + "_reason"] = why
            if status in ("skip", "n/a"):
                applicable = False
            elif applicable is None:
                applicable = True
        row["applicable"] = bool(applicable)
        rows.append(row)
        if os.environ.get("TONNX_SUITE_VERBOSE"):
            print("%4d/%d %s %s" % (i + 1, len(names), name,
                                    " ".join("%s=%s" % (c, row[c]) for c in columns)), flush=True)
    report(cls_name, rows, columns, time.time() - start)
    if ARGS.csv:
        with open(ARGS.csv, "w", newline="") as f:
            fields = ["case", "applicable"] + [x for c in columns for x in (c, c + "_reason")]
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
    return check_expected(rows) if ARGS.expected else 0


def report(cls_name, rows, columns, seconds):
    app = [r for r in rows if r["applicable"]]
    print("%s: %d cases, %d applicable (%.0f s)" % (cls_name, len(rows), len(app), seconds))
    passes = {c: {r["case"] for r in app if r[c] == "pass"} for c in columns}
    for c in columns:
        print("  %-6s pass %d of %d" % (c, len(passes[c]), len(app)))
    if "tonnx" in passes and "torch" in passes:
        t, p = passes["tonnx"], passes["torch"]
        print("  both %d, only tonnx %d, only torch.onnx %d" % (len(t & p), len(t - p), len(p - t)))


def check_expected(rows):
    expected = {}
    with open(ARGS.expected) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            case, _, why = line.partition("\t")
            expected[case] = why
    bad = []
    for r in rows:
        if r["case"] not in expected and r["applicable"] and r["tonnx"] != "pass":
            bad.append("unexpected failure: %s: %s" % (r["case"], r["tonnx_reason"]))
        elif r["case"] in expected and r["tonnx"] == "pass":
            bad.append("now passes, remove it from %s: %s" % (os.path.basename(ARGS.expected), r["case"]))
        elif r["case"] in expected and not r["applicable"]:
            bad.append("listed but not applicable (%s): %s" % (r["tonnx_reason"], r["case"]))
    seen = {r["case"] for r in rows}
    if not ARGS.filter:
        bad += ["listed but not in the suite: %s" % c for c in expected if c not in seen]
    for b in bad:
        print(b)
    print("expected failures: %d listed, %d differences" % (len(expected), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
