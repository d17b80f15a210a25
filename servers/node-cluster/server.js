'use strict';
// node-cluster: a primary forks $WORKERS processes, each running app.js's event loop.
// Node's default cluster scheduling on Linux: the primary accepts connections and
// hands them to workers round-robin. Each worker has its own /tenth counter.
const cluster = require('node:cluster');
const os = require('node:os');

if (cluster.isPrimary) {
  const workers = Number.parseInt(process.env.WORKERS, 10) || os.availableParallelism();
  let stopping = false;

  // Take every worker down with the primary; SIGKILL stragglers after 3 s.
  const shutdown = (code) => {
    if (stopping) return;
    stopping = true;
    const alive = Object.values(cluster.workers);
    if (alive.length === 0) process.exit(code);
    for (const w of alive) w.process.kill('SIGTERM');
    cluster.on('exit', () => {
      if (Object.keys(cluster.workers).length === 0) process.exit(code);
    });
    setTimeout(() => {
      for (const w of Object.values(cluster.workers)) w.process.kill('SIGKILL');
      process.exit(code);
    }, 3000).unref();
  };
  process.on('SIGTERM', () => shutdown(0));
  process.on('SIGINT', () => shutdown(0));

  // A worker that dies (bind failure, crash) fails the whole server rather than
  // being silently replaced mid-benchmark.
  cluster.on('exit', (w, code, signal) => {
    if (stopping) return;
    console.error(`node-cluster: worker ${w.process.pid} exited (${signal || code}); stopping`);
    shutdown(1);
  });

  let listening = 0;
  cluster.on('listening', () => {
    if (++listening === workers) console.log(`node-cluster: ${workers} workers listening`);
  });
  for (let i = 0; i < workers; i++) cluster.fork();
} else {
  // Each worker opens its own pool of $DB_POOL connections (the harness divides them by $WORKERS).
  // The packages come from this folder's node_modules (`npm ci`), so they are required here.
  require('../_shared/node-http-app/app.js').start(`node-cluster worker ${process.pid}`, {
    pg: require('pg'),
    escapeHtml: require('escape-html'),
  });
}
