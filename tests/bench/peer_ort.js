// SPDX-License-Identifier: MIT
/*
 * ONNX Runtime (CPU, onnxruntime-node) for tests/bench/bench_peers.py: one JSON command per line
 * on stdin, one JSON answer per line on stdout.
 *   {"op":"load","name":N,"path":MODEL.onnx}          -> {"ok":true}
 *   {"op":"run","name":N,"input":RAW.f32,"shape":[n,c,h,w],"batch":B}
 *      runs the n inputs (float32, back to back) in batches of B, each call timed
 *      -> {"us":[per call],"classes":[arg-max per input]}
 * One intra-op and one inter-op thread, sequential execution, all graph optimizations.
 */
'use strict';
const fs = require('fs');
const readline = require('readline');
const ort = require(process.env.ORT_NODE || 'onnxruntime-node');

const sessions = {};
const inputs = {};

function argmax(a, off, n) {
	let best = 0;
	for (let i = 1; i < n; i++)
		if (a[off + i] > a[off + best])
			best = i;
	return best;
}

async function run(cmd) {
	const s = sessions[cmd.name];
	const [n, c, h, w] = cmd.shape;
	const item = c * h * w, b = cmd.batch;
	if (!inputs[cmd.input]) {
		const buf = fs.readFileSync(cmd.input);
		inputs[cmd.input] = new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4);
	}
	const x = inputs[cmd.input];
	const us = [], classes = [];
	for (let i = 0; i + b <= n; i += b) {
		const t = new ort.Tensor('float32', x.subarray(i * item, (i + b) * item), [b, c, h, w]);
		const t0 = process.hrtime.bigint();
		const out = await s.run({[s.inputNames[0]]: t});
		us.push(Number(process.hrtime.bigint() - t0) / 1e3);
		const y = out[s.outputNames[0]];
		const k = y.dims[1];
		for (let j = 0; j < b; j++)
			classes.push(argmax(y.data, j * k, k));
	}
	return {us, classes};
}

async function main() {
	const rl = readline.createInterface({input: process.stdin});
	for await (const line of rl) {
		const cmd = JSON.parse(line);
		let ans;
		try {
			if (cmd.op === 'load') {
				sessions[cmd.name] = await ort.InferenceSession.create(cmd.path, {
					intraOpNumThreads: 1,
					interOpNumThreads: 1,
					executionMode: 'sequential',
					graphOptimizationLevel: 'all',
				});
				ans = {ok: true};
			} else {
				ans = await run(cmd);
			}
		} catch (e) {
			ans = {error: String(e)};
		}
		process.stdout.write(JSON.stringify(ans) + '\n');
	}
}

main();
