#!/usr/bin/env bash
# External data from the CLI: `tonnx export --external-data`, a write killed part way
# (the file size limit), and `tonnx convert` on torch.onnx's one-file-per-tensor layout,
# each checked on ONNX Runtime and tonnx's backend against LibTorch or torch.onnx's weights.
# Usage: external_data_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
tonnx=$build/tonnx
dir="$build/test_tmp/external_data"
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "FAIL: $*"; exit 1; }
runs() {  # MODEL DATA: ONNX Runtime and tonnx's backend reproduce the test data
  node "$src/tools/ort_run.js" "$1" --test-data "$2"
  "$tonnx" run "$1" --test-data "$2" | tail -1
}

echo "== export --external-data: a transformer encoder"
"$tonnx" export transformer_encoder_small -o "$dir/t.onnx" --external-data --test-data "$dir/data" |
  tee "$dir/export.txt"
grep -q "external data $dir/t.onnx.data" "$dir/export.txt" || fail "no data file in the summary"
[ "$(stat -c %s "$dir/t.onnx")" -lt 100000 ] || fail "weights stayed in the model"
"$tonnx" check "$dir/t.onnx"
"$tonnx" print "$dir/t.onnx" > /dev/null
runs "$dir/t.onnx" "$dir/data"

echo "== --external-data=NAME, every tensor out"
mkdir -p "$dir/named"
"$tonnx" export transformer_encoder_small -o "$dir/named/t.onnx" --external-data=w.bin \
  --external-data-threshold 0 > /dev/null
[ -f "$dir/named/w.bin" ] || fail "--external-data=w.bin wrote no w.bin"
runs "$dir/named/t.onnx" "$dir/data"
"$tonnx" export transformer_encoder_small -o "$dir/x.onnx" --external-data=../w.bin 2> "$dir/err.txt" &&
  fail "a data file outside the model's folder was accepted"
grep -q "leaves the model's folder" "$dir/err.txt" || { cat "$dir/err.txt"; fail "unclear error"; }

echo "== a write killed part way leaves the previous pair"
mkdir -p "$dir/kill"
"$tonnx" export resnet18 -o "$dir/kill/r.onnx" --external-data > /dev/null
cp "$dir/kill/r.onnx" "$dir/kill.model0" && cp "$dir/kill/r.onnx.data" "$dir/kill.data0"
for extra in "--external-data" "--no-external-data"; do
  # ulimit -f: the kernel kills the process (SIGXFSZ) at the write that crosses 1 MB.
  if (ulimit -f 1024; exec "$tonnx" export resnet18 --seed 7 -o "$dir/kill/r.onnx" $extra) \
      > /dev/null 2>&1; then
    fail "the export was not killed"
  fi
  cmp "$dir/kill/r.onnx" "$dir/kill.model0" || fail "killed export ($extra) changed the model"
  cmp "$dir/kill/r.onnx.data" "$dir/kill.data0" || fail "killed export ($extra) changed the data"
  [ "$(ls -A "$dir/kill" | wc -l)" = 2 ] || { ls -la "$dir/kill"; fail "leftovers ($extra)"; }
done

echo "== tonnx convert: torch.onnx's one file per tensor, to one file and back"
/usr/bin/python3 - "$dir" <<'PY'
import os, sys
import numpy as np
import onnx
import torch
from onnx import numpy_helper

d = sys.argv[1]
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.LayerNorm(256),
                            torch.nn.Linear(256, 32)).eval()
x = torch.randn(3, 64)
os.makedirs(f"{d}/per_tensor", exist_ok=True)
torch.onnx.export(model, (x,), f"{d}/inline.onnx", input_names=["x"], output_names=["y"])
m = onnx.load(f"{d}/inline.onnx")
# torch.onnx's layout for models over 2 GB: one file per tensor, named after it.
onnx.save_model(m, f"{d}/per_tensor/m.onnx", save_as_external_data=True,
                all_tensors_to_one_file=False, size_threshold=0)
files = [f for f in os.listdir(f"{d}/per_tensor") if f != "m.onnx"]
assert len(files) >= 4, files
data = f"{d}/pt_data/test_data_set_0"
os.makedirs(data, exist_ok=True)
with torch.no_grad():
    y = model(x)
for name, t in (("input_0", x), ("output_0", y)):
    with open(f"{data}/{name}.pb", "wb") as f:
        f.write(numpy_helper.from_array(t.numpy()).SerializeToString())
PY
"$tonnx" convert "$dir/per_tensor/m.onnx" -o "$dir/one/m.onnx" --external-data 2> "$dir/err.txt" &&
  fail "a missing output folder was accepted"
mkdir -p "$dir/one"
"$tonnx" convert "$dir/per_tensor/m.onnx" -o "$dir/one/m.onnx" --external-data \
  --external-data-threshold 0
[ "$(ls "$dir/one")" = "m.onnx
m.onnx.data" ] || { ls "$dir/one"; fail "convert did not write one data file"; }
"$tonnx" check "$dir/one/m.onnx"
runs "$dir/one/m.onnx" "$dir/pt_data"
mkdir -p "$dir/back"
"$tonnx" convert "$dir/one/m.onnx" -o "$dir/back/m.onnx" --inline
[ "$(ls "$dir/back")" = "m.onnx" ] || fail "--inline left a data file"
/usr/bin/python3 - "$dir" <<'PY'
import sys
import numpy as np
import onnx
from onnx import numpy_helper
d = sys.argv[1]
a = {t.name: numpy_helper.to_array(t) for t in onnx.load(f"{d}/inline.onnx").graph.initializer}
b = {t.name: numpy_helper.to_array(t) for t in onnx.load(f"{d}/back/m.onnx").graph.initializer}
assert a.keys() == b.keys(), (a.keys(), b.keys())
for k in a:
    assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k
print("inline round trip: %d tensors equal to torch.onnx's" % len(a))
PY
"$tonnx" convert "$dir/one/m.onnx" -o "$dir/back/m2.onnx" 2> "$dir/err.txt" && fail "no mode accepted"
grep -q "exactly one of --external-data" "$dir/err.txt" || { cat "$dir/err.txt"; fail "unclear usage error"; }
echo "== external data is read from the model's folder only, never the working directory"
# A canary in the working directory and none in the model's folder: a Constant (main graph and
# an If branch) and a sparse initializer name it. No command may read it (its value 12345.5
# must appear nowhere) and each says the location cannot be opened in the model's folder.
mkdir -p "$dir/cwd" "$dir/model"
/usr/bin/python3 - "$dir" <<'PY'
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
d = sys.argv[1]
np.array([12345.5], dtype=np.float32).tofile(f"{d}/cwd/cwd_canary.bin")
def external(name):
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[1])
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value="cwd_canary.bin")
    return t
def const_graph(name):
    return helper.make_graph(
        [helper.make_node("Constant", [], ["c_" + name], value=external("k_" + name))], name,
        [], [helper.make_tensor_value_info("c_" + name, TensorProto.FLOAT, [1])])
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
main = helper.make_graph(
    [helper.make_node("Constant", [], ["k"], value=external("k")),
     helper.make_node("Add", ["x", "k"], ["y"])], "g", [x], [y])
branch = helper.make_graph(
    [helper.make_node("If", ["cond"], ["y"], then_branch=const_graph("then"),
                      else_branch=const_graph("else"))], "g", [cond], [y])
sparse = helper.make_graph([helper.make_node("Add", ["x", "s"], ["y"])], "g", [x], [y])
values = external("s")
indices = numpy_helper.from_array(np.array([0], dtype=np.int64))
sparse.sparse_initializer.append(helper.make_sparse_tensor(values, indices, [1]))
for name, g in (("main", main), ("branch", branch), ("sparse", sparse)):
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
              f"{d}/model/{name}.onnx")
PY
rel() { realpath --relative-to="$dir/cwd" "$dir/model/$1.onnx"; }
canary_unread() {  # LOG WHAT: the canary's value is absent and the error names the folder
  if grep -q "12345.5" "$1"; then cat "$1"; fail "$2 read the working directory's canary"; fi
  grep -q "cwd_canary.bin' cannot be opened in the model's folder" "$1" ||
    { cat "$1"; fail "$2 does not say the location cannot be opened in the model's folder"; }
}
(
  cd "$dir/cwd"
  for m in main branch sparse; do
    for f in text dot svg; do
      "$tonnx" print "$(rel $m)" --format $f > ../out.txt 2>&1 || true
      if grep -q "12345.5" ../out.txt; then fail "print --format $f ($m) read the canary"; fi
    done
    "$tonnx" check "$(rel $m)" > ../out.txt 2>&1 && fail "check ($m) accepted the model"
    canary_unread ../out.txt "check ($m)"
  done
  "$tonnx" print "$(rel main)" > ../out.txt
  canary_unread ../out.txt "print"
  for m in main branch; do
    "$tonnx" run "$(rel $m)" --random-inputs > ../out.txt 2>&1 && fail "run ($m) accepted it"
    canary_unread ../out.txt "run ($m)"
  done
  "$tonnx" verify dcgan_discriminator --onnx "$(rel main)" --runtime tonnx > ../out.txt 2>&1 &&
    fail "verify accepted the model"
  canary_unread ../out.txt "verify"
  "$tonnx" convert "$(rel main)" -o ../converted.onnx --inline > ../out.txt 2>&1 &&
    fail "convert read the canary"
  canary_unread ../out.txt "convert"
  [ ! -e ../converted.onnx ] || fail "convert wrote a file"
)
rm -rf "$dir"
echo "external data: all passed"
