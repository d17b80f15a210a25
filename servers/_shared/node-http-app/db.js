'use strict';
// The database endpoints (SPEC.md, "Database endpoints") on node-postgres: a pg.Pool of at
// most $DB_POOL connections per process. The row passes in its own `pg` and `escape-html`
// (installed in the row's node_modules by `npm ci`), since Node resolves packages from
// the requiring file's folder and this shared folder has none.
// Queries go out as plain pool.query(text, values): an unnamed statement, parsed on every
// call (node-postgres prepares only queries given a `name`).

const WORLD_ROWS = 10000;
const MAX_QUERIES = 500;
const SELECT_WORLD = 'SELECT id, randomNumber FROM World WHERE id = $1';
const UPDATE_WORLD = 'UPDATE World SET randomNumber = $1 WHERE id = $2';
const SELECT_FORTUNES = 'SELECT id, message FROM Fortune';
const PATHS = new Set(['/db', '/queries', '/fortunes', '/updates']);

const randomId = () => 1 + Math.floor(Math.random() * WORLD_ROWS);

// ?queries=N clamped to 1..500; missing, empty, 0, negative or not an integer → 1.
function queryCount(params) {
  const s = params.get('queries');
  const n = s !== null && /^[+-]?[0-9]+$/.test(s) ? Number(s) : 1;
  return n < 1 ? 1 : Math.min(n, MAX_QUERIES);
}

// The pool from $DATABASE_URL and $DB_POOL; null without $DATABASE_URL (the paths then
// answer 503). A bad $DB_POOL exits with one line naming it. node-postgres connects lazily.
function openPool(label, pg) {
  const url = process.env.DATABASE_URL;
  if (!url) return null;
  const size = Number(process.env.DB_POOL);
  if (!Number.isInteger(size) || size < 1) {
    console.error(`${label}: DB_POOL=${JSON.stringify(process.env.DB_POOL ?? '')} is not a positive ` +
      'integer; set it to the most connections this process may open');
    process.exit(2);
  }
  const pool = new pg.Pool({ connectionString: url, max: size });
  // An idle client's error (the server closed it) is emitted here; unhandled it would end the process.
  pool.on('error', (err) => console.error(`${label}: idle database connection: ${err.message}`));
  return pool;
}

async function readWorld(pool) {
  const { rows } = await pool.query(SELECT_WORLD, [randomId()]);
  return rows[0];
}

// randomNumber comes back lower-cased (unquoted names fold to lower case); JSON keeps the contract's key.
const worldJson = (row) => ({ id: row.id, randomNumber: row.randomnumber });

// Each row its own SELECT, issued together: the pool spreads them over its connections.
const readWorlds = (pool, n) => Promise.all(Array.from({ length: n }, () => readWorld(pool)));

async function updates(pool, n) {
  const worlds = (await readWorlds(pool, n)).map(worldJson);
  for (const w of worlds) w.randomNumber = randomId();
  // One UPDATE per row, each its own (autocommit) transaction: concurrent requests cannot deadlock.
  await Promise.all(worlds.map((w) => pool.query(UPDATE_WORLD, [w.randomNumber, w.id])));
  return worlds;
}

function fortunesPage(rows, escapeHtml) {
  rows.push({ id: 0, message: 'Additional fortune added at request time.' });
  rows.sort((a, b) => (a.message < b.message ? -1 : a.message > b.message ? 1 : 0));
  let html = '<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>' +
    '<tr><th>id</th><th>message</th></tr>';
  for (const f of rows) html += `<tr><td>${f.id}</td><td>${escapeHtml(f.message)}</td></tr>`;
  return html + '</table></body></html>';
}

// The handler for the database paths, or null for a path that is not one of them.
// `send(res, status, type, body)` is app.js's reply.
function dbRoutes(label, deps, send) {
  const pool = deps ? openPool(label, deps.pg) : null;
  const json = (res, value) => send(res, 200, 'application/json', JSON.stringify(value));
  const routes = {
    '/db': async (res) => json(res, worldJson(await readWorld(pool))),
    '/queries': async (res, params) => json(res, (await readWorlds(pool, queryCount(params))).map(worldJson)),
    '/updates': async (res, params) => json(res, await updates(pool, queryCount(params))),
    '/fortunes': async (res) => {
      const { rows } = await pool.query(SELECT_FORTUNES);
      send(res, 200, 'text/html; charset=utf-8', fortunesPage(rows, deps.escapeHtml));
    },
  };
  return (pathname) => {
    if (!PATHS.has(pathname)) return null;
    return (res, params) => {
      res.setHeader('Server', 'node'); // Node's http module adds Date
      if (!pool) return send(res, 503, 'text/plain', 'no database configured (DATABASE_URL is not set)');
      return routes[pathname](res, params).catch((err) => {
        console.error(`${label}: ${pathname}: ${err.message}`);
        if (!res.headersSent) send(res, 500, 'text/plain', 'Internal Server Error');
      });
    };
  };
}

module.exports = { dbRoutes };
