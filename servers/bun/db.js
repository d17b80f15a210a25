// bun: the database endpoints (SPEC.md, "Database endpoints") on Bun's built-in PostgreSQL
// client, Bun.SQL: a pool of at most $DB_POOL connections, opened lazily. Its defaults are
// kept: each tagged-template query becomes a named prepared statement (Parse once per
// connection, then Bind/Execute), and queries issued while every connection is busy are
// pipelined onto one (a Sync after each).
import { SQL } from "bun";

const WORLD_ROWS = 10000;
const MAX_QUERIES = 500;
const ADDED_FORTUNE = { id: 0, message: "Additional fortune added at request time." };
const PATHS = new Set(["/db", "/queries", "/fortunes", "/updates"]);

const randomId = () => 1 + Math.floor(Math.random() * WORLD_ROWS);

// ?queries=N clamped to 1..500; missing, empty, 0, negative or not an integer → 1.
function queryCount(params) {
  const s = params.get("queries");
  const n = s !== null && /^[+-]?[0-9]+$/.test(s) ? Number(s) : 1;
  return n < 1 ? 1 : Math.min(n, MAX_QUERIES);
}

// The pool from $DATABASE_URL and $DB_POOL; null without $DATABASE_URL (the paths then
// answer 503). A bad $DB_POOL exits with one line naming it.
function openPool() {
  const url = process.env.DATABASE_URL;
  if (!url) return null;
  const size = Number(process.env.DB_POOL);
  if (!Number.isInteger(size) || size < 1) {
    console.error(`bun: DB_POOL=${JSON.stringify(process.env.DB_POOL ?? "")} is not a positive ` +
      "integer; set it to the most connections this process may open");
    process.exit(2);
  }
  return new SQL(url, { max: size });
}

// randomnumber comes back lower-cased (unquoted names fold to lower case); JSON keeps the contract's key.
async function readWorld(sql) {
  const [row] = await sql`SELECT id, randomNumber FROM World WHERE id = ${randomId()}`;
  return { id: row.id, randomNumber: row.randomnumber };
}

// Each row its own SELECT, issued together: Bun.SQL spreads them over its connections.
const readWorlds = (sql, n) => Promise.all(Array.from({ length: n }, () => readWorld(sql)));

async function updates(sql, n) {
  const worlds = await readWorlds(sql, n);
  for (const w of worlds) w.randomNumber = randomId();
  // One UPDATE per row, each its own (autocommit) transaction: concurrent requests cannot deadlock.
  await Promise.all(worlds.map((w) => sql`UPDATE World SET randomNumber = ${w.randomNumber} WHERE id = ${w.id}`));
  return worlds;
}

async function fortunesPage(sql) {
  const rows = [...(await sql`SELECT id, message FROM Fortune`), ADDED_FORTUNE];
  rows.sort((a, b) => (a.message < b.message ? -1 : a.message > b.message ? 1 : 0));
  let html = "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>" +
    "<tr><th>id</th><th>message</th></tr>";
  // Bun.escapeHTML: Bun's own escaping of & < > " '
  for (const f of rows) html += `<tr><td>${f.id}</td><td>${Bun.escapeHTML(f.message)}</td></tr>`;
  return html + "</table></body></html>";
}

// The handler for the database paths, or null for a path that is not one of them.
// `send(status, type, body, headers)` is server.js's reply; Bun.serve adds Date itself.
export function dbRoutes(send) {
  const sql = openPool();
  const headers = { server: "bun" };
  const json = (value) => send(200, "application/json", JSON.stringify(value), headers);
  const routes = {
    "/db": async () => json(await readWorld(sql)),
    "/queries": async (params) => json(await readWorlds(sql, queryCount(params))),
    "/updates": async (params) => json(await updates(sql, queryCount(params))),
    "/fortunes": async () => send(200, "text/html; charset=utf-8", await fortunesPage(sql), headers),
  };
  return (pathname) => {
    if (!PATHS.has(pathname)) return null;
    return async (params) => {
      if (!sql) return send(503, "text/plain", "no database configured (DATABASE_URL is not set)", headers);
      try {
        return await routes[pathname](params);
      } catch (err) {
        console.error(`bun: ${pathname}: ${err.message}`);
        return send(500, "text/plain", "Internal Server Error", headers);
      }
    };
  };
}
