// Peer runner: Pyodide (CPython compiled to WebAssembly) in Node, the usual
// way to sandbox Python in a JS host. Also records its one-time load time
// and the process's resident memory after loading.
//
// Usage: node pyodide_runner.mjs NODE_DIR   (NODE_DIR holds node_modules/pyodide)
// Prints a JSON array with one peer result on stdout.
//
// Tools are plain JS functions (async, returning promises) placed in the
// chain's globals; Python awaits them directly. One chain is
// `runPythonAsync(script)` with a fresh globals dict, in one loaded Pyodide.
// The same scripts run unchanged. Sampling follows benches/peers/_common.py.

import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const nodeDir = path.resolve(process.argv[2] ?? "target/peers/node");
const NAMES = ["start", "call_1", "calls_100", "fib25", "loop_1e6", "gather_10x50ms"];
const MIN_SAMPLES = 3;
const MAX_SAMPLES = 2000;
const WARMUP_S = Number(process.env.PEERS_WARMUP_S ?? 0.3);
const BUDGET_S = Number(process.env.PEERS_BUDGET_S ?? 2.0);

const now = () => performance.now() / 1000; // seconds

async function sample(run) {
  let start = now();
  let runs = 0;
  while (runs < 2 || now() - start < WARMUP_S) {
    await run();
    runs++;
  }
  const times = [];
  start = now();
  while (times.length < MIN_SAMPLES || (now() - start < BUDGET_S && times.length < MAX_SAMPLES)) {
    const t = now();
    await run();
    times.push((now() - t) * 1e6);
  }
  times.sort((a, b) => a - b);
  // The same median as Python's statistics.median.
  const mid = times.length >> 1;
  const median = times.length % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
  return { median_us: median, samples: times.length };
}

const { loadPyodide, version } = await import(
  pathToFileURL(path.join(nodeDir, "node_modules/pyodide/pyodide.mjs")).href
);
const rssBefore = process.memoryUsage().rss;
const t0 = now();
const pyodide = await loadPyodide();
const loadMs = (now() - t0) * 1000;
const rssAfterLoad = process.memoryUsage().rss;
process.stderr.write(`pyodide loaded in ${loadMs.toFixed(0)} ms, RSS ${(rssAfterLoad / 2 ** 20).toFixed(0)} MiB\n`);

const noop = async () => null;
// Keyword arguments from Python arrive as a trailing object.
const sleep = (...args) => {
  const last = args[args.length - 1];
  const seconds = typeof last === "object" && last !== null ? last.seconds : last;
  return new Promise((resolve) => setTimeout(() => resolve(null), seconds * 1000));
};

const newDict = pyodide.globals.get("dict");
async function chain(src) {
  const globals = newDict();
  globals.set("noop", noop);
  globals.set("sleep", sleep);
  try {
    const r = await pyodide.runPythonAsync(src, { globals });
    r?.destroy?.();
  } finally {
    globals.destroy();
  }
}

const workloads = {};
for (const name of NAMES) {
  const src = readFileSync(path.join(here, "workloads", `${name}.py`), "utf8");
  await chain(src); // fails loudly if the chain does
  workloads[name] = await sample(() => chain(src));
  process.stderr.write(`pyodide ${name}: ${JSON.stringify(workloads[name])}\n`);
}

console.log(
  JSON.stringify([
    {
      peer: "pyodide",
      version: `pyodide ${version} (Python ${pyodide.runPython("import sys; sys.version.split()[0]")}), Node ${process.version}`,
      how: "one loaded Pyodide; runPythonAsync per chain with fresh globals; async JS tools",
      workloads,
      extra: {
        load_ms: loadMs,
        rss_mib_before_load: rssBefore / 2 ** 20,
        rss_mib_after_load: rssAfterLoad / 2 ** 20,
        rss_mib_at_end: process.memoryUsage().rss / 2 ** 20,
      },
    },
  ]),
);
