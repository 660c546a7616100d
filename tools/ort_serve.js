#!/usr/bin/env node
// ONNX Runtime (onnxruntime-node) as a long-lived oracle process for test runners that
// would otherwise start node once per model (tests/torch_onnx_suite/runner.py).
//
// Reads one JSON request per line on stdin, answers one JSON line on stdout:
//   {"op": "load", "model": "M.onnx"}
//     -> {"inputs": ["x", ...], "outputs": ["y", ...]}
//   {"op": "run", "model": "M.onnx", "outdir": "D",
//    "feeds": [{"name": "x", "dtype": "float32", "dims": [2, 3], "file": "x.bin"}, ...]}
//     -> {"outputs": [{"name": "y", "dtype": "float32", "dims": [2, 3], "file": "D/out_0.bin"}]}
// Tensor files hold the raw little-endian elements (bool as one byte each). Any failure
// answers {"error": "..."}; the server keeps going. Sessions are cached per model path
// until the next "load" of another model.
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const ort = require('onnxruntime-node');

const ARR = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array,
  int16: Int16Array, uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array,
  int64: BigInt64Array, uint64: BigUint64Array, bool: Uint8Array, float16: Uint16Array,
};

let cached = {model: null, session: null};

async function session(model) {
  if (cached.model !== model) {
    cached = {model: null, session: null};
    const s = await ort.InferenceSession.create(model, {
      intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all', logSeverityLevel: 3,
    });
    cached = {model, session: s};
  }
  return cached.session;
}

function readTensor(feed) {
  const Type = ARR[feed.dtype];
  if (!Type) throw new Error(`input ${feed.name}: dtype ${feed.dtype} is not supported by the server`);
  const bytes = fs.readFileSync(feed.file);
  const copy = new ArrayBuffer(bytes.length);
  new Uint8Array(copy).set(bytes);
  const data = new Type(copy);
  return new ort.Tensor(feed.dtype, feed.dtype === 'bool' ? Uint8Array.from(data) : data, feed.dims);
}

async function handle(req) {
  const s = await session(req.model);
  if (req.op === 'load') return {inputs: s.inputNames, outputs: s.outputNames};
  if (req.op !== 'run') throw new Error(`unknown op ${req.op}`);
  const feeds = {};
  for (const f of req.feeds) feeds[f.name] = readTensor(f);
  const results = await s.run(feeds);
  const outputs = [];
  s.outputNames.forEach((name, i) => {
    const t = results[name];
    if (!t || t.data === undefined) throw new Error(`output ${name} is not a tensor`);
    const file = path.join(req.outdir, `out_${i}.bin`);
    const data = t.type === 'bool' ? Uint8Array.from(t.data, (v) => (v ? 1 : 0)) : t.data;
    fs.writeFileSync(file, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
    outputs.push({name, dtype: t.type, dims: Array.from(t.dims), file});
  });
  return {outputs};
}

const rl = readline.createInterface({input: process.stdin, terminal: false});
let queue = Promise.resolve();
rl.on('line', (line) => {
  queue = queue.then(async () => {
    let answer;
    try {
      answer = await handle(JSON.parse(line));
    } catch (e) {
      answer = {error: String(e && e.message ? e.message : e)};
    }
    process.stdout.write(JSON.stringify(answer) + '\n');
  });
});
