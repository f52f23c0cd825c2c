// Runs a model's first input through ONNX Runtime (onnxruntime-node) and writes
// its first output as raw float32: the peer that exported models are checked
// against (tests/unit/test_frontend.cpp, tests/train/).
//
//   node tests/ort_run.js ORT_MODULE_DIR MODEL.onnx INPUT.f32 '[N,C,H,W]' OUTPUT.f32
'use strict';
const fs = require('fs');
const [ortDir, model, input, shape, output] = process.argv.slice(2);
if (!output) {
  console.error('usage: node ort_run.js ORT_MODULE_DIR MODEL.onnx INPUT.f32 SHAPE_JSON OUTPUT.f32');
  process.exit(2);
}
const ort = require(ortDir);
(async () => {
  const s = await ort.InferenceSession.create(model);
  const b = fs.readFileSync(input);
  const x = new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
  const out = await s.run({[s.inputNames[0]]: new ort.Tensor('float32', x, JSON.parse(shape))});
  const y = out[s.outputNames[0]].data;
  fs.writeFileSync(output, Buffer.from(y.buffer, y.byteOffset, y.byteLength));
})().catch(e => { console.error(e); process.exit(1); });
