// Times a model with ONNX Runtime's CPU library (onnxruntime-node), the peer
// `singa bench` is compared against. Prints one JSON line, with the fields
// `singa bench --json` prints.
//
//   node bench/ort_bench.js MODEL.onnx [--threads N] [--iters K] [--warmup W]
//        [--batch B] [--dim NAME=V ...] [--profile PREFIX]
//
// --profile writes ONNX Runtime's own per-node trace (PREFIX_<date>.json,
// Chrome trace format) over the warm-up and timed
// runs, to set against `singa bench --profile` node by node.
//
// Inputs are random, shaped as singa bench shapes them: the leading symbolic
// dimension is the batch size, other symbolic dimensions come from --dim.
// Peak RSS is the process's high-water mark minus node's own, measured before
// ONNX Runtime is loaded, so the two runtimes are charged only for themselves.
'use strict';

const fs = require('fs');
const path = require('path');

function baselineRssMiB() {
  // VmHWM is the peak resident set so far; before require() it is node alone.
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) / 1024 : process.memoryUsage().rss / (1024 * 1024);
}

const nodeBaseline = baselineRssMiB();
const ort = require(path.join(__dirname, 'node_modules', 'onnxruntime-node'));

function parseArgs(argv) {
  const a = {threads: 1, iters: 20, warmup: 3, batch: 1, dims: {}, model: null, profile: null};
  for (let i = 0; i < argv.length; ++i) {
    const k = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${k} needs a value`);
      return argv[++i];
    };
    if (k === '--threads') a.threads = Number(next());
    else if (k === '--iters') a.iters = Number(next());
    else if (k === '--warmup') a.warmup = Number(next());
    else if (k === '--batch') a.batch = Number(next());
    else if (k === '--profile') a.profile = next();
    else if (k === '--dim') {
      const [name, v] = next().split('=');
      a.dims[name] = Number(v);
    } else if (k.startsWith('--')) throw new Error(`unknown option ${k}`);
    else a.model = k;
  }
  if (!a.model) throw new Error('usage: node ort_bench.js MODEL.onnx [--threads N] [--iters K] [--warmup W] [--batch B] [--dim NAME=V]');
  for (const k of ['threads', 'iters', 'batch'])
    if (!(a[k] >= 1)) throw new Error(`--${k} must be >= 1`);
  return a;
}

// A small seeded generator, so every run feeds the same values.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

function makeInput(meta, batch, dims, next) {
  const shape = meta.shape.map((d, i) => (typeof d === 'number' && d >= 0 ? d : dims[d] !== undefined ? dims[d] : i === 0 ? batch : 1));
  const n = shape.reduce((x, y) => x * y, 1);
  switch (meta.type) {
    case 'float32': return new ort.Tensor('float32', Float32Array.from({length: n}, next), shape);
    case 'int64': return new ort.Tensor('int64', BigInt64Array.from({length: n}, () => BigInt(Math.floor(next() * 4))), shape);
    case 'int32': return new ort.Tensor('int32', Int32Array.from({length: n}, () => Math.floor(next() * 4)), shape);
    default: throw new Error(`input '${meta.name}': random ${meta.type} inputs are not supported`);
  }
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(a.model, {
    intraOpNumThreads: a.threads,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    ...(a.profile ? {enableProfiling: true, profileFilePrefix: a.profile} : {}),
  });
  const prepareMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const next = rng(42);
  const feeds = {};
  const shapes = [];
  for (const meta of session.inputMetadata) {
    if (!meta.isTensor) throw new Error(`input '${meta.name}' is not a tensor`);
    feeds[meta.name] = makeInput(meta, a.batch, a.dims, next);
    shapes.push(`${meta.name}[${feeds[meta.name].dims.join(',')}]`);
  }
  for (let i = 0; i < a.warmup; ++i) await session.run(feeds);
  const times = [];
  for (let i = 0; i < a.iters; ++i) {
    const t = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  const sorted = [...times].sort((x, y) => x - y);
  const n = sorted.length;
  const median = n % 2 ? sorted[(n - 1) / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  const mean = times.reduce((x, y) => x + y, 0) / n;
  if (a.profile) {
    session.endProfiling();  // onnxruntime-node returns no path: the file is PREFIX_<date>.json
    console.error(`ort_bench: profile written to ${a.profile}_<date>.json`);
  }
  const peak = baselineRssMiB();
  console.log(JSON.stringify({
    model: a.model, runtime: `onnxruntime ${ort.env.versions ? ort.env.versions.common : ''}`.trim(), threads: a.threads,
    batch: a.batch, iters: a.iters, warmup: a.warmup, inputs: shapes.join(', '), median_ms: median, min_ms: sorted[0],
    mean_ms: mean, prepare_ms: prepareMs, peak_rss_mib: peak - nodeBaseline, node_baseline_mib: nodeBaseline,
  }));
}

main().catch((e) => {
  console.error(`ort_bench: error: ${e.message}`);
  process.exit(1);
});
