// Start-up to ready, for benches/compare.sh: spawns a server command N times and measures, with
// a monotonic high-resolution clock, from just before spawn until the first HTTP 200 from its
// /readyz. The server must print `listening on http://HOST:PORT/...` on stderr (it listens on
// port 0, so the port is only known from that line); /readyz is then polled back to back, with
// at most 1 ms between a refused or non-200 probe and the next.
//
//   node benches/startup.mjs --runs 5 -- ./target/release/gridgate serve --listen 127.0.0.1:0 ...
//
// Prints one JSON line: {"runs_ms": [...], "median_ms": m}. Each server is stopped (SIGTERM,
// then SIGKILL after 5 s) and reaped before the next start, so an embedded store's lock is free.

import { spawn } from 'node:child_process';
import http from 'node:http';

const sep = process.argv.indexOf('--');
if (sep < 0 || sep === process.argv.length - 1) {
  console.error('usage: node startup.mjs [--runs N] [--timeout-ms T] -- command args...');
  process.exit(2);
}
const opts = process.argv.slice(2, sep);
const [command, ...args] = process.argv.slice(sep + 1);
const opt = (name, fallback) => {
  const i = opts.indexOf(name);
  return i >= 0 ? Number(opts[i + 1]) : fallback;
};
const runs = opt('--runs', 5);
const timeoutMs = opt('--timeout-ms', 10000);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Status of GET url, or 0 when the connection fails. A fresh connection per probe. */
const probe = (url) =>
  new Promise((resolve) => {
    const req = http.get(url, { agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('error', () => resolve(0));
    req.setTimeout(2000, () => req.destroy());
  });

async function once() {
  const started = process.hrtime.bigint();
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  try {
    let stderr = '';
    const base = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no "listening on" line within ${timeoutMs} ms:\n${stderr}`)), timeoutMs);
      child.stderr.on('data', (chunk) => {
        stderr += chunk;
        // Only a whole line: the server may write it in pieces (Rust's stderr is unbuffered).
        const m = /listening on (http:\/\/[^/\s]+)\S*\n/.exec(stderr);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      child.on('exit', (code) => reject(new Error(`server exited (${code}) before listening:\n${stderr}`)));
    });
    child.stderr.resume();
    const deadline = started + BigInt(timeoutMs) * 1_000_000n;
    for (;;) {
      const status = await probe(`${base}/readyz`);
      if (status === 200) return Number(process.hrtime.bigint() - started) / 1e6;
      if (process.hrtime.bigint() > deadline) throw new Error(`/readyz not 200 within ${timeoutMs} ms (last ${status})`);
      await sleep(1);
    }
  } finally {
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(killer);
  }
}

const times = [];
for (let i = 0; i < runs; i++) times.push(await once());
const sorted = [...times].sort((a, b) => a - b);
const median = sorted[Math.floor((sorted.length - 1) / 2)];
const round = (x) => Math.round(x * 10) / 10;
console.log(JSON.stringify({ runs_ms: times.map(round), median_ms: round(median) }));
