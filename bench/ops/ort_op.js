// Times several one-node models with ONNX Runtime's CPU library
// (bench/node_modules/onnxruntime-node) in one process, for bench/ops/run.sh:
// starting node and loading ORT once per model would cost more than most ops.
// Prints one JSON line per model ({model, median_ms, min_ms, wall_ms} or {model, error}).
//
// median_ms is ORT's own time for Run (the "model_run" event of its profiler),
// with outputs written into tensors allocated once: the Node binding's cost of
// copying inputs and handing fresh output buffers to JavaScript (page faults on
// megabytes of output, several times the kernel's time) is not ORT's and is
// left out, as `singa bench` times its C++ run. wall_ms is the JavaScript-side
// median, binding included.
//
//   node bench/ops/ort_op.js [--threads N] [--iters K] [--warmup W] MODEL.onnx...
//
// Inputs are random in [0,1) like `singa bench`'s; float32 and float64 only
// (the op matrix's models take nothing else as a graph input).
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const ort = require(path.join(__dirname, '..', 'node_modules', 'onnxruntime-node'));

function parseArgs(argv) {
  const a = {threads: 1, iters: 20, warmup: 3, models: []};
  for (let i = 0; i < argv.length; ++i) {
    const k = argv[i];
    if (k === '--threads') a.threads = Number(argv[++i]);
    else if (k === '--iters') a.iters = Number(argv[++i]);
    else if (k === '--warmup') a.warmup = Number(argv[++i]);
    else if (k.startsWith('--')) throw new Error(`unknown option ${k}`);
    else a.models.push(k);
  }
  for (const k of ['threads', 'iters'])
    if (!(a[k] >= 1)) throw new Error(`--${k} must be >= 1`);
  return a;
}

function makeInput(meta) {
  const shape = meta.shape.map((d) => (typeof d === 'number' && d >= 0 ? d : 1));
  const n = shape.reduce((x, y) => x * y, 1);
  let s = 42;
  const next = () => ((s = (s * 1664525 + 1013904223) >>> 0) / 4294967296);
  if (meta.type === 'float32') return new ort.Tensor('float32', Float32Array.from({length: n}, next), shape);
  if (meta.type === 'float64') return new ort.Tensor('float64', Float64Array.from({length: n}, next), shape);
  throw new Error(`input '${meta.name}': random ${meta.type} inputs are not supported`);
}

function median(v) {
  const t = [...v].sort((x, y) => x - y);
  const n = t.length;
  return n % 2 ? t[(n - 1) / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

const kArrays = {float32: Float32Array, float64: Float64Array, float16: Uint16Array, int64: BigInt64Array,
  int32: Int32Array, bool: Uint8Array, uint8: Uint8Array, int8: Int8Array};

// The durations (ms) of ORT's "model_run" profiler events, in run order; removes the trace file.
function modelRunTimes(dir, prefix) {
  const f = fs.readdirSync(dir).find((n) => n.startsWith(prefix + '_') && n.endsWith('.json'));
  if (!f) throw new Error('no ORT profile written');
  const events = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
  fs.unlinkSync(path.join(dir, f));
  return events.filter((e) => e.name === 'model_run').map((e) => e.dur / 1000);
}

async function timeModel(model, a, dir, k) {
  const prefix = `ort_op_${k}`;
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: a.threads, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential',
    enableProfiling: true, profileFilePrefix: path.join(dir, prefix),
  });
  const feeds = {};
  for (const meta of session.inputMetadata) feeds[meta.name] = makeInput(meta);
  // One run gives the output shapes; later runs write into tensors made once.
  const first = await session.run(feeds);
  const fetches = {};
  for (const [name, t] of Object.entries(first)) {
    const A = kArrays[t.type];
    if (!A) throw new Error(`output '${name}': ${t.type} outputs are not supported`);
    fetches[name] = new ort.Tensor(t.type, new A(t.size), t.dims);
  }
  for (let i = 0; i < a.warmup; ++i) await session.run(feeds, fetches);
  const times = [];
  for (let i = 0; i < a.iters; ++i) {
    const t = process.hrtime.bigint();
    await session.run(feeds, fetches);
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  session.endProfiling();
  await session.release();
  const runs = modelRunTimes(dir, prefix).slice(-a.iters);
  if (runs.length !== a.iters) throw new Error(`ORT profile has ${runs.length} runs, expected ${a.iters}`);
  return {model, median_ms: median(runs), min_ms: Math.min(...runs), wall_ms: median(times)};
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ort_op_'));
  for (const [k, m] of a.models.entries()) {
    let r;
    try {
      r = await timeModel(m, a, dir, k);
    } catch (e) {
      r = {model: m, error: String(e.message || e).split('\n')[0]};
    }
    console.log(JSON.stringify(r));
  }
  fs.rmSync(dir, {recursive: true, force: true});
}

main().catch((e) => {
  console.error(`ort_op: error: ${e.message}`);
  process.exit(1);
});
