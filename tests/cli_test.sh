#!/usr/bin/env bash
# The CLI's contract: help, version, models, and bad input that fails cleanly, naming the
# value and what was expected, without writing anything.
set -uo pipefail
build=$1
t="$build/tonnx"
dir="$build/test_tmp/cli"
rm -rf "$dir" && mkdir -p "$dir"
# shellcheck source=tests/expect.sh
source "$(dirname "$0")/expect.sh"
expect version 0 '^tonnx [0-9]+\.[0-9]+' -- "$t" --version
expect help 0 'usage: tonnx COMMAND' -- "$t" help
expect export_help 0 '--test-data DIR' -- "$t" export --help
expect help_cmd 0 'usage: tonnx check' -- "$t" help check
expect no_args 2 'usage' -- "$t"
expect unknown_command 2 "unknown command 'frobnicate'" -- "$t" frobnicate
expect models 0 'alexnet +10x3x224x224 +61100840' -- "$t" models
expect unknown_model 1 "unknown model 'alexnot'; the zoo has: alexnet" -- "$t" export alexnot -o "$dir/a.onnx"
expect bad_opset 2 '--opset 8 is out of range: use 9 to 23' -- "$t" export alexnet -o "$dir/a.onnx" --opset 8
expect bad_opset_text 2 "--opset 'x' is not an integer" -- "$t" export alexnet -o "$dir/a.onnx" --opset x
expect wrong_rank 2 'input 0 of alexnet must have rank 4 \(like 10x3x224x224\), got 3x224x224' -- "$t" export alexnet -o "$dir/a.onnx" --input-shape 3x224x224
expect missing_output 2 'missing -o OUT.onnx' -- "$t" export alexnet
expect unknown_option 2 "unknown option '--frob'" -- "$t" export alexnet -o "$dir/a.onnx" --frob
expect bad_default_dtype 2 "--default-dtype int64 is not a floating dtype: use float32, float64, float16 or bfloat16" -- "$t" export alexnet -o "$dir/a.onnx" --default-dtype int64
expect training_modes 2 "--training and --preserve-training-mode exclude each other" -- "$t" export alexnet -o "$dir/a.onnx" --training --preserve-training-mode
expect too_many_names 1 'input_names has 19 names, but the model has 1 input\(s\) and 16 parameter tensor\(s\): at most 17 names' -- \
  "$t" export alexnet -o "$dir/a.onnx" --input-names x,a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r
expect unwritable 1 "cannot write '/nonexistent/a.onnx': folder '/nonexistent' does not exist" -- "$t" export alexnet -o /nonexistent/a.onnx
expect wrong_channels 1 'tracing the model failed: .*expected input\[1, 4, 224, 224\] to have 3 channels' -- "$t" export alexnet -o "$dir/a.onnx" --input-shape 1x4x224x224
expect check_missing 1 "cannot read model file '$dir/none.onnx'" -- "$t" check "$dir/none.onnx"
printf 'not a model' > "$dir/garbage.onnx"
expect check_garbage 1 "is not a valid ONNX model" -- "$t" check "$dir/garbage.onnx"
if ls "$dir"/a.onnx "$dir"/.a.onnx* >/dev/null 2>&1; then
  echo "FAIL: a failed export left a file behind"; fails=$((fails + 1))
fi
# a good export, then a failed one to the same path: the good file stays
"$t" export resnet18 -o "$dir/good.onnx" --input-shape 1x3x32x32 --test-data "$dir/data" >/dev/null
sum=$(md5sum < "$dir/good.onnx")
"$t" export resnet18 -o "$dir/good.onnx" --input-shape 1x5x32x32 >/dev/null 2>&1
if [ "$sum" = "$(md5sum < "$dir/good.onnx")" ]; then echo "ok   good_file_untouched"; passes=$((passes + 1)); else echo "FAIL good file was overwritten"; fails=$((fails + 1)); fi
expect check_ok 0 'valid' -- "$t" check "$dir/good.onnx"
expect export_onnx_file 2 "'$dir/good.onnx' is an ONNX model already: export takes a zoo model's name or a TorchScript file" -- "$t" export "$dir/good.onnx" -o "$dir/y.onnx"
expect print 0 'onnx::Conv\[dilations=\[1, 1\], group=1, kernel_shape=\[7, 7\].*scope: ResNet/Conv2d\[conv1\]' -- "$t" print "$dir/good.onnx"
expect symbolics 0 'aten::_convolution	9' -- "$t" symbolics
# tonnx run: test data, timing, profile, the speed options, inputs and outputs as .pb files
m="$dir/good.onnx" in0="$dir/data/test_data_set_0/input_0.pb"
# --exact: LibTorch's kernels (the classifier's Gemm on LibTorch's BLAS, not a GEMV; layer3's
# and layer4's small convolutions on ATen's native path), so at one thread every op computes
# what LibTorch computed at export, bit for bit.
expect run_test_data 0 '^test_data_set_0: output_0 max_abs=0 max_rel=0 pass$' -- "$t" run "$m" --test-data "$dir/data" --threads 1 --exact
# By default the Gemm is a GEMV and layer3's and layer4's convolutions (2x2 and 1x1 planes)
# run on oneDNN; at 2 threads (and with the speed options) the convolutions sum in another
# order than LibTorch did at export. These logits reach 100 in magnitude, so float32
# rounding moves a near-zero one by up to 1.1e-4 (measured on an AMD EPYC, 2 cores; by
# default at one thread 2.5e-5 on 0.0065): atol 1e-4 is 1e-6 of the outputs' scale, still
# far below any real error.
expect run_default 0 '^test_data_set_0: output_0 max_abs=[0-9.e-]+ max_rel=[0-9.e-]+ pass$' -- "$t" run "$m" --test-data "$dir/data" --threads 1 --atol 1e-4
expect run_repeat 0 '^median_ms=[0-9.]+$' -- "$t" run "$m" --test-data "$dir/data" --repeat 3 --threads 2 --atol 1e-4
expect run_profile 0 '^  FusedConv x20: ' -- "$t" run "$m" --test-data "$dir/data" --profile --atol 1e-4
expect run_profile_planes 0 '^  FusedConv 16x16: ' -- "$t" run "$m" --test-data "$dir/data" --profile --atol 1e-4
expect run_no_optimize 0 '^  Conv x20: ' -- "$t" run "$m" --test-data "$dir/data" --no-optimize --profile --atol 1e-4
# --plain-layout: every activation NCHW, the same results bit for bit as the blocked layout
expect run_plain_layout 0 '^test_data_set_0: output_0 max_abs=0 max_rel=0 pass$' -- "$t" run "$m" --test-data "$dir/data" --threads 1 --exact --plain-layout
for opt in --fold-batchnorm --onednn-conv; do
  expect "run$opt" 0 '1 passed, 0 failed' -- "$t" run "$m" --test-data "$dir/data" "$opt" --atol 1e-4
done
expect run_output_dir 0 '^output_0: Float\(1, 1000\) \{-?[0-9]' -- "$t" run "$m" --input "input=$in0" --output-dir "$dir/out"
# the written output, fed back as test data, matches exactly
mkdir -p "$dir/round/test_data_set_0" && cp "$in0" "$dir/out/output_0.pb" "$dir/round/test_data_set_0/" 2>/dev/null
expect run_output_roundtrip 0 'max_abs=0 max_rel=0 pass' -- "$t" run "$m" --test-data "$dir/round"
expect run_unknown_input 1 "the model has no input named 'nope' \(its inputs: input\)" -- "$t" run "$m" --input "nope=$in0"
expect run_missing_input 1 "input 'input' is not given: give it with --input input=FILE.pb, every input with --test-data DIR, or let --random-inputs" -- "$t" run "$m"
expect run_bad_threads 2 "--threads 'x' is not an integer" -- "$t" run "$m" --threads x
expect run_no_model 1 "cannot read model file '$dir/none.onnx'" -- "$t" run "$dir/none.onnx"
# tonnx verify: LibTorch, tonnx and ONNX Runtime agree; another model's file (weights of seed
# 1) differs first at the first convolution, whose one-node reproduction fails the same way
# (ONNX Runtime sums the convolutions in another order: atol 1e-4 as for run above)
expect verify_ok 0 'output_0 +ort +max_abs .* pass' -- "$t" verify resnet18 --input-shape 1x3x32x32 --runtime tonnx,ort --atol 1e-4
expect verify_search 0 'no node differs from LibTorch beyond the tolerance on tonnx.s backend without optimizations \([0-9]+ values compared\)' -- "$t" verify resnet18 --input-shape 1x3x32x32 --runtime tonnx --search
expect verify_other_file 1 "first divergent node: Conv '.*' from aten::_convolution at scope ResNet/Conv2d\[conv1\]" -- \
  "$t" verify resnet18 --input-shape 1x3x32x32 --seed 1 --onnx "$m" --runtime tonnx --repro-dir "$dir/repro"
expect verify_repro 1 'test_data_set_0: .* FAIL' -- "$t" run "$dir/repro/node.onnx" --test-data "$dir/repro"
expect verify_bad_runtime 2 "--runtime: unknown runtime 'trt'; use tonnx, ort or tonnx,ort" -- "$t" verify resnet18 --runtime trt
# pictures: DOT, and SVG that parses as XML; a depth collapses scopes
expect print_dot 0 '^digraph "main_graph" \{' -- "$t" print "$m" --format dot
expect print_depth 0 'label="[0-9]+ ops\\nAdd x8' -- "$t" print "$m" --format dot --depth 1
expect print_depth_range 2 '--depth 4294967296 is out of range: give 0 \(every scope\) to 1000' -- "$t" print "$m" --format dot --depth 4294967296
expect print_svg 0 '' -- "$t" print "$m" --format svg -o "$dir/good.svg"
expect print_svg_xml 0 'svg ok' -- /usr/bin/python3 -c "import xml.etree.ElementTree as E; r = E.parse('$dir/good.svg').getroot(); assert r.tag.endswith('svg'); print('svg ok')"
expect print_bad_format 2 '--format png is not text, dot or svg' -- "$t" print "$m" --format png
expect print_depth_text 2 '--depth and --no-initializers are for --format dot or svg' -- "$t" print "$m" --depth 2
# random inputs from the declared types; symbolic dims need --dim
expect run_random 0 '^input: Float\(1, 3, 32, 32\) \{.*\(random\)' -- "$t" run "$m" --random-inputs --seed 3
"$t" export resnet18 -o "$dir/dyn.onnx" --input-shape 1x3x32x32 --dynamic-axes input:0 --quiet >/dev/null
expect run_random_dim 0 '^output_0: Float\(3, 1000\)' -- "$t" run "$dir/dyn.onnx" --random-inputs --dim input_dynamic_axes_1=3
expect run_random_given 0 '^output_0: Float\(1, 1000\)' -- "$t" run "$dir/dyn.onnx" --random-inputs --input "input=$in0"
expect run_random_huge 2 "would have shape 1000000000x3x32x32, over 2\^31 elements" -- "$t" run "$dir/dyn.onnx" --random-inputs --dim input_dynamic_axes_1=1000000000
expect run_random_no_dim 2 "axis 0 of input 'input' is the symbolic dim 'input_dynamic_axes_1': give its size with --dim input_dynamic_axes_1=N" -- "$t" run "$dir/dyn.onnx" --random-inputs
expect run_seed_alone 2 '--seed and --dim are for --random-inputs' -- "$t" run "$m" --seed 1
# progress: a status line on a terminal only; --timing prints the stages
expect export_timing 0 '^tonnx timing: write [0-9.]+ ms' -- "$t" export resnet18 -o "$dir/t.onnx" --input-shape 1x3x32x32 --timing
out=$("$t" export resnet18 -o "$dir/t.onnx" --input-shape 1x3x32x32 2>&1)
if grep -q $'\033' <<<"$out"; then echo "FAIL progress_piped: escape codes when not a terminal"; fails=$((fails + 1)); else echo "ok   progress_piped"; passes=$((passes + 1)); fi
if command -v script >/dev/null; then
  out=$(script -qc "$t export resnet18 -o $dir/t.onnx --input-shape 1x3x32x32" /dev/null)
  if grep -q 'tonnx: write ' <<<"$out"; then echo "ok   progress_terminal"; passes=$((passes + 1)); else echo "FAIL progress_terminal: no status line"; echo "$out" | head -5; fails=$((fails + 1)); fi
  out=$(script -qc "$t export resnet18 -o $dir/t.onnx --input-shape 1x3x32x32 --quiet" /dev/null)
  if grep -q 'tonnx: write ' <<<"$out"; then echo "FAIL progress_quiet: a status line with --quiet"; fails=$((fails + 1)); else echo "ok   progress_quiet"; passes=$((passes + 1)); fi
fi
expect export_strict_trace 0 'exported ' -- "$t" export resnet18 -o "$dir/t.onnx" --input-shape 1x3x32x32 --strict-trace
expect trace_flags 2 '--strict-trace and --no-trace-check exclude each other' -- "$t" export resnet18 -o "$dir/t.onnx" --strict-trace --no-trace-check
expect models_wide 0 'word_language_model_rnn_relu +35x20,2x20x200 +13505278' -- "$t" models
# tonnx cpu: the report, and TONNX_MAX_ISA applied to tonnx's kernels, ATen and oneDNN alike.
expect cpu 0 'tonnx kernels: (avx512|avx2|none)' -- "$t" cpu
expect cpu_cap_avx2 0 'oneDNN: (avx2|avx|sse41)' -- env TONNX_MAX_ISA=avx2 "$t" cpu
expect cpu_cap_avx2_width 0 'blocked layout: 8 channels' -- env TONNX_MAX_ISA=avx2 "$t" cpu
expect cpu_cap_none 0 'ATen: NO AVX' -- env TONNX_MAX_ISA=none "$t" cpu
expect cpu_cap_none_kernels 0 'tonnx kernels: none' -- env TONNX_MAX_ISA=none "$t" cpu
expect cpu_bad_cap 1 "TONNX_MAX_ISA='avx9' is not avx512, avx2 or none" -- env TONNX_MAX_ISA=avx9 "$t" cpu
rm -rf "$dir"
expect_summary
