#!/usr/bin/env bash
# Output paths that are not regular files (issue 56): a character device is written in place
# (so -o /dev/null discards and -o /dev/full fails with ENOSPC), never renamed over; a FIFO is
# written in place while a process reads it and refused without one (no hang); block devices
# and sockets are refused; external data is refused beside a device; a failed write to
# standard output is a non-zero exit. Device nodes are made with mknod in a temporary folder
# (root only: elsewhere those cases are reported as not run).
# Usage: output_paths_test.sh BUILD_DIR
set -uo pipefail
build=$1
t="$build/tonnx"
dir="$build/test_tmp/output_paths"
rm -rf "$dir" && mkdir -p "$dir"
# shellcheck source=tests/expect.sh
source "$(dirname "$0")/expect.sh"
/usr/bin/python3 - "$dir/m.onnx" <<'PY'
import sys
from onnx import TensorProto, helper
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
open(sys.argv[1], "wb").write(helper.make_model(g).SerializeToString())
PY
m="$dir/m.onnx"

# Standard output that cannot be written.
expect stdout_full 1 'writing standard output failed' -- sh -c "'$t' print '$m' > /dev/full"
expect stdout_ok 0 'onnx::Relu' -- "$t" print "$m"

# A FIFO: no reader is an error at once, with a reader the text arrives.
mkfifo "$dir/fifo"
expect fifo_no_reader 1 "cannot write '.*fifo': it is a FIFO that no process reads" -- \
  "$t" print "$m" -o "$dir/fifo"
[ -p "$dir/fifo" ] && ok fifo_kept || bad "fifo_kept: the FIFO was replaced"
# A reader held open on fd 3 before tonnx starts (no race with a background reader); the text
# fits the pipe's buffer, and what arrived is read back for two seconds.
exec 3<>"$dir/fifo"
expect fifo_reader 0 '' -- "$t" print "$m" -o "$dir/fifo"
timeout 2 cat <&3 > "$dir/from_fifo.txt"
exec 3>&-
grep -q "onnx::Relu" "$dir/from_fifo.txt" && ok fifo_text || bad "fifo_text: nothing arrived"
[ -p "$dir/fifo" ] && ok fifo_kept_after || bad "fifo_kept_after: the FIFO was replaced"

if [ "$(id -u)" = 0 ] && mknod "$dir/null" c 1 3 2>/dev/null && mknod "$dir/full" c 1 7; then
  for cmd in "print $m" "export dcgan_discriminator" "convert $m --inline"; do
    name=${cmd%% *}
    # shellcheck disable=SC2086  # $cmd holds the command's words
    expect "${name}_to_null" 0 '' -- "$t" $cmd -o "$dir/null"
    [ -c "$dir/null" ] && ok "${name}_null_kept" || bad "${name}_null_kept: replaced"
    # shellcheck disable=SC2086
    expect "${name}_to_full" 1 "writing '.*full' failed: No space left on device" -- \
      "$t" $cmd -o "$dir/full"
    [ -c "$dir/full" ] && ok "${name}_full_kept" || bad "${name}_full_kept: replaced"
  done
  expect external_beside_device 1 "external data needs a model file in a folder" -- \
    "$t" convert "$m" -o "$dir/null" --external-data
  [ ! -e "$dir/null.data" ] && ok no_data_file || bad "no_data_file: $dir/null.data written"
  [ "$(ls -A "$dir" | grep -c '^\.')" = 0 ] && ok no_temporaries || bad "no_temporaries"
  if mknod "$dir/blk" b 7 200 2>/dev/null; then
    expect block_device 1 "cannot write '.*blk': it is a block device" -- \
      "$t" print "$m" -o "$dir/blk"
    [ -b "$dir/blk" ] && ok block_kept || bad "block_kept: replaced"
  fi
else
  echo "not run: device nodes (mknod needs root)"
fi
/usr/bin/python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$dir/sock"
expect socket 1 "cannot write '.*sock': it is a socket" -- "$t" print "$m" -o "$dir/sock"
[ -S "$dir/sock" ] && ok socket_kept || bad "socket_kept: replaced"
# Test data folders follow the model folder's rules: a set folder or file that is a symbolic
# link out of DIR is refused, for reading and for writing, and nothing is written through it.
"$t" export dcgan_discriminator -o "$dir/d.onnx" --test-data "$dir/real" > /dev/null
mkdir -p "$dir/td" "$dir/elsewhere"
mv "$dir/real/test_data_set_0" "$dir/elsewhere/set"
ln -s "$dir/elsewhere/set" "$dir/td/test_data_set_0"
expect test_data_link_read 1 "test data folder '.*test_data_set_0' is a symbolic link" -- \
  "$t" run "$dir/d.onnx" --test-data "$dir/td"
mkdir -p "$dir/empty" "$dir/td2"
ln -s "$dir/empty" "$dir/td2/test_data_set_0"
expect test_data_link_write 1 "test data folder '.*test_data_set_0' is a symbolic link" -- \
  "$t" export dcgan_discriminator -o "$dir/d2.onnx" --test-data "$dir/td2"
[ -z "$(ls -A "$dir/empty")" ] && ok test_data_not_written_through ||
  bad "test_data_not_written_through: $(ls "$dir/empty")"
mkdir -p "$dir/td3/test_data_set_0"
ln -s "$dir/elsewhere/set/input_0.pb" "$dir/td3/test_data_set_0/input_0.pb"
expect test_data_file_link 1 "test data file '.*input_0.pb' is a symbolic link" -- \
  "$t" run "$dir/d.onnx" --test-data "$dir/td3"

# tonnx's own parsers bound their nesting (a crash took 29 s and 4.4 GB before).
deep=$(printf '[%.0s' $(seq 60000))1$(printf ']%.0s' $(seq 60000))
expect inputs_nesting 2 "--inputs: brackets nested more than 32 deep" -- \
  "$t" export "$dir/none.pt" -o "$dir/x.onnx" --inputs "$deep"
expect input_not_a_tensor 1 "/proc/self/mem' is not a serialized onnx TensorProto: it is empty" -- \
  "$t" run "$m" --input x=/proc/self/mem
rm -rf "$dir"
expect_summary
