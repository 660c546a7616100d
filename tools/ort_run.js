#!/usr/bin/env node
// Runs an ONNX model on ONNX Runtime (onnxruntime-node), the independent oracle.
//
//   node tools/ort_run.js MODEL.onnx --test-data DIR [--rtol 1e-3] [--atol 1e-5]
//       [--output-dir OUT] [--threads N] [--repeat N]
//
// With --test-data, feeds DIR/test_data_set_N/input_K.pb (serialized onnx TensorProto),
// compares with output_K.pb, prints the largest differences and "N passed, M failed",
// and exits 1 on any mismatch. --repeat N prints median_ms over N runs after a warm-up.
// ORT_PROFILE=PREFIX writes ONNX Runtime's profile of every run to PREFIX_<date>.json
// (bench/ort_profile.py sums it per op type).
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

// --- a minimal protobuf reader/writer for onnx.TensorProto ---
const DT = {1: 'float32', 2: 'uint8', 3: 'int8', 5: 'int16', 6: 'int32', 7: 'int64', 9: 'bool', 10: 'float16', 11: 'float64', 12: 'uint32', 13: 'uint64'};
const DT_CODE = Object.fromEntries(Object.entries(DT).map(([k, v]) => [v, Number(k)]));
const ARR = {float32: Float32Array, uint8: Uint8Array, int8: Int8Array, int16: Int16Array, int32: Int32Array, int64: BigInt64Array, bool: Uint8Array, float16: Uint16Array, float64: Float64Array, uint32: Uint32Array, uint64: BigUint64Array};

function readVarint(buf, pos) {
  let result = 0n, shift = 0n;
  for (;;) {
    if (pos.p >= buf.length) throw new Error('truncated varint');
    const b = buf[pos.p++];
    result |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return result;
    shift += 7n;
  }
}

function decodeTensor(buf) {
  const pos = {p: 0};
  const t = {dims: [], dataType: 0, name: '', raw: null, floats: [], int32s: [], int64s: [], doubles: []};
  while (pos.p < buf.length) {
    const key = Number(readVarint(buf, pos));
    const field = key >> 3, wire = key & 7;
    if (wire === 0) {
      const v = readVarint(buf, pos);
      if (field === 1) t.dims.push(Number(BigInt.asIntN(64, v)));
      else if (field === 2) t.dataType = Number(v);
      else if (field === 5) t.int32s.push(Number(BigInt.asIntN(32, v)));
      else if (field === 7) t.int64s.push(BigInt.asIntN(64, v));
    } else if (wire === 2) {
      const len = Number(readVarint(buf, pos));
      const bytes = buf.subarray(pos.p, pos.p + len);
      pos.p += len;
      const sub = {p: 0};
      if (field === 1) while (sub.p < bytes.length) t.dims.push(Number(BigInt.asIntN(64, readVarint(bytes, sub))));
      else if (field === 4) for (let i = 0; i < len; i += 4) t.floats.push(bytes.readFloatLE(i));
      else if (field === 5) while (sub.p < bytes.length) t.int32s.push(Number(BigInt.asIntN(32, readVarint(bytes, sub))));
      else if (field === 7) while (sub.p < bytes.length) t.int64s.push(BigInt.asIntN(64, readVarint(bytes, sub)));
      else if (field === 8) t.name = bytes.toString('utf8');
      else if (field === 9) t.raw = Buffer.from(bytes);
      else if (field === 10) for (let i = 0; i < len; i += 8) t.doubles.push(bytes.readDoubleLE(i));
    } else if (wire === 5) {
      if (field === 4) t.floats.push(buf.readFloatLE(pos.p));
      pos.p += 4;
    } else if (wire === 1) {
      if (field === 10) t.doubles.push(buf.readDoubleLE(pos.p));
      pos.p += 8;
    } else {
      throw new Error(`unsupported wire type ${wire}`);
    }
  }
  const type = DT[t.dataType];
  if (!type) throw new Error(`tensor data_type ${t.dataType} is not supported here`);
  const n = t.dims.reduce((a, b) => a * b, 1);
  let data;
  if (t.raw) {
    const copy = new Uint8Array(t.raw.length);
    copy.set(t.raw);
    data = new ARR[type](copy.buffer, 0, n);
  } else if (type === 'float32') data = Float32Array.from(t.floats);
  else if (type === 'float64') data = Float64Array.from(t.doubles);
  else if (type === 'int64') data = BigInt64Array.from(t.int64s);
  else data = ARR[type].from(t.int32s);
  if (type === 'bool') data = Uint8Array.from(data, (x) => (x ? 1 : 0));
  return {name: t.name, tensor: new ort.Tensor(type, data, t.dims)};
}

function varint(n) {
  let v = BigInt.asUintN(64, BigInt(n));
  const out = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return Buffer.from(out);
}

function encodeTensor(name, t) {
  const parts = [];
  for (const d of t.dims) parts.push(varint((1 << 3) | 0), varint(d));
  parts.push(varint((2 << 3) | 0), varint(DT_CODE[t.type]));
  const nameBuf = Buffer.from(name, 'utf8');
  parts.push(varint((8 << 3) | 2), varint(nameBuf.length), nameBuf);
  const raw = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  parts.push(varint((9 << 3) | 2), varint(raw.length), raw);
  return Buffer.concat(parts);
}

function compare(got, want, rtol, atol) {
  if (got.type !== want.type && !(got.type === 'bool' && want.type === 'bool'))
    return {ok: false, why: `dtype ${got.type} != expected ${want.type}`, maxAbs: NaN, maxRel: NaN};
  if (got.dims.join('x') !== want.dims.join('x'))
    return {ok: false, why: `shape [${got.dims}] != expected [${want.dims}]`, maxAbs: NaN, maxRel: NaN};
  let maxAbs = 0, maxRel = 0, ok = true;
  for (let i = 0; i < want.data.length; i++) {
    const g = Number(got.data[i]), w = Number(want.data[i]);
    if (g === w || (Number.isNaN(g) && Number.isNaN(w))) continue;
    const d = Math.abs(g - w);
    maxAbs = Math.max(maxAbs, d);
    maxRel = Math.max(maxRel, d / Math.max(Math.abs(w), 1e-12));
    if (!(d <= atol + rtol * Math.abs(w))) ok = false;
  }
  return {ok, why: ok ? '' : `values differ beyond rtol=${rtol} atol=${atol}`, maxAbs, maxRel};
}

async function main() {
  const args = process.argv.slice(2);
  const opt = {rtol: 1e-3, atol: 1e-5, threads: 1, repeat: 0};
  const rest = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--test-data') opt.testData = args[++i];
    else if (a === '--output-dir') opt.outputDir = args[++i];
    else if (a === '--rtol') opt.rtol = Number(args[++i]);
    else if (a === '--atol') opt.atol = Number(args[++i]);
    else if (a === '--threads') opt.threads = Number(args[++i]);
    else if (a === '--repeat') opt.repeat = Number(args[++i]);
    else rest.push(a);
  }
  if (rest.length !== 1 || !opt.testData) {
    console.error('usage: node tools/ort_run.js MODEL.onnx --test-data DIR [--rtol X] [--atol Y] [--output-dir D] [--threads N] [--repeat N]');
    process.exit(2);
  }
  if (!fs.existsSync(path.join(opt.testData, 'test_data_set_0'))) {
    // A mistyped folder must not read as "0 passed, 0 failed".
    console.error(`ort_run: no test_data_set_0 folder under '${opt.testData}'` +
                  (fs.existsSync(opt.testData) ? '' : ' (it does not exist)'));
    process.exit(2);
  }
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(rest[0], {intraOpNumThreads: opt.threads, interOpNumThreads: 1, graphOptimizationLevel: 'all',
    enableProfiling: !!process.env.ORT_PROFILE, profileFilePrefix: process.env.ORT_PROFILE || 'ort'});
  console.log(`ort_prepare_ms=${Number(process.hrtime.bigint() - t0) / 1e6}`);
  let passed = 0, failed = 0;
  for (let s = 0; ; s++) {
    const dir = path.join(opt.testData, `test_data_set_${s}`);
    if (!fs.existsSync(dir)) break;
    // By name where the files name every model input (a data set may hold example inputs the
    // model does not read); by position where no file names a model input, as ONNX's test data
    // is read; an error otherwise (as tonnx::set_inputs).
    const read = [];
    for (let k = 0; fs.existsSync(path.join(dir, `input_${k}.pb`)); k++)
      read.push(decodeTensor(fs.readFileSync(path.join(dir, `input_${k}.pb`))));
    const fail = (why) => { console.error(`test_data_set_${s}: ${why}`); process.exit(2); };
    const feeds = {};
    const missing = [];
    let matched = 0;
    for (const n of session.inputNames) {
      const at = read.filter((r) => r.name === n);
      if (at.length > 1) fail(`${at.length} input files are named '${n}': name each input_K.pb after one model input`);
      if (at.length === 0) { missing.push(n); continue; }
      matched++;
      feeds[n] = at[0].tensor;
    }
    if (missing.length > 0) {
      const names = session.inputNames.join(', ');
      if (matched > 0) fail(`no input file is named ${missing.map((n) => `'${n}'`).join(', ')}, though others are named after the model's inputs (${names}): name every input_K.pb after its input`);
      if (read.length > session.inputNames.length) fail(`${read.length} input files for a model with ${session.inputNames.length} inputs (${names}), and their names do not say which are the model's: name each input_K.pb after its input, or keep only the model's inputs`);
      for (const n of Object.keys(feeds)) delete feeds[n];
      read.forEach((r, k) => { feeds[session.inputNames[k]] = r.tensor; });
    }
    const results = await session.run(feeds);
    let ok = true;
    let line = `test_data_set_${s}:`;
    for (let k = 0; k < session.outputNames.length; k++) {
      const name = session.outputNames[k];
      const got = results[name];
      const f = path.join(dir, `output_${k}.pb`);
      if (opt.outputDir) {
        fs.mkdirSync(opt.outputDir, {recursive: true});
        fs.writeFileSync(path.join(opt.outputDir, `output_${k}.pb`), encodeTensor(name, got));
      }
      if (!fs.existsSync(f)) continue;
      const want = decodeTensor(fs.readFileSync(f)).tensor;
      const c = compare(got, want, opt.rtol, opt.atol);
      ok = ok && c.ok;
      line += ` ${name} max_abs=${c.maxAbs.toExponential(3)} max_rel=${c.maxRel.toExponential(3)}${c.ok ? '' : ' (' + c.why + ')'}`;
    }
    console.log(line + (ok ? ' pass' : ' FAIL'));
    ok ? passed++ : failed++;
    if (opt.repeat > 0 && s === 0) {
      await session.run(feeds);
      const ms = [];
      for (let r = 0; r < opt.repeat; r++) {
        const a = process.hrtime.bigint();
        await session.run(feeds);
        ms.push(Number(process.hrtime.bigint() - a) / 1e6);
      }
      ms.sort((x, y) => x - y);
      console.log(`ort_median_ms=${ms[Math.floor(ms.length / 2)]}`);
    }
  }
  if (process.env.ORT_PROFILE) await session.endProfiling();
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.error(`ort_run: ${e.message}`);
  process.exit(1);
});
