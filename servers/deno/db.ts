// deno: the database endpoints (SPEC.md, "Database endpoints") on node-postgres (npm:pg, the
// version node-http uses) through Deno's npm support: a pg.Pool of at most $DB_POOL connections,
// opened lazily. Packages are pinned by deno.lock and installed into node_modules/ by the build
// (`deno install`), so the server runs with --cached-only and fetches nothing.
// Queries go out as plain pool.query(text, values): an unnamed statement, parsed on every call
// (node-postgres prepares only queries given a `name`).
import pg from "pg";
import escapeHtml from "escape-html";

const WORLD_ROWS = 10000;
const MAX_QUERIES = 500;
const SELECT_WORLD = "SELECT id, randomNumber FROM World WHERE id = $1";
const UPDATE_WORLD = "UPDATE World SET randomNumber = $1 WHERE id = $2";
const SELECT_FORTUNES = "SELECT id, message FROM Fortune";
const PATHS = new Set(["/db", "/queries", "/fortunes", "/updates"]);

type World = { id: number; randomNumber: number };
type Fortune = { id: number; message: string };
type Send = (status: number, type: string, body: BodyInit, headers?: Record<string, string>) => Response;

const randomId = () => 1 + Math.floor(Math.random() * WORLD_ROWS);

// ?queries=N clamped to 1..500; missing, empty, 0, negative or not an integer → 1.
function queryCount(params: URLSearchParams): number {
  const s = params.get("queries");
  const n = s !== null && /^[+-]?[0-9]+$/.test(s) ? Number(s) : 1;
  return n < 1 ? 1 : Math.min(n, MAX_QUERIES);
}

// The pool from $DATABASE_URL and $DB_POOL; null without $DATABASE_URL (the paths then
// answer 503). A bad $DB_POOL exits with one line naming it.
function openPool(): pg.Pool | null {
  const url = Deno.env.get("DATABASE_URL");
  if (!url) return null;
  const size = Number(Deno.env.get("DB_POOL"));
  if (!Number.isInteger(size) || size < 1) {
    console.error(`deno: DB_POOL=${JSON.stringify(Deno.env.get("DB_POOL") ?? "")} is not a positive ` +
      "integer; set it to the most connections this process may open");
    Deno.exit(2);
  }
  const pool = new pg.Pool({ connectionString: url, max: size });
  // An idle client's error (the server closed it) is emitted here; unhandled it would end the process.
  pool.on("error", (err: Error) => console.error(`deno: idle database connection: ${err.message}`));
  return pool;
}

// randomnumber comes back lower-cased (unquoted names fold to lower case); JSON keeps the contract's key.
async function readWorld(pool: pg.Pool): Promise<World> {
  const { rows } = await pool.query(SELECT_WORLD, [randomId()]);
  return { id: rows[0].id, randomNumber: rows[0].randomnumber };
}

// Each row its own SELECT, issued together: the pool spreads them over its connections.
const readWorlds = (pool: pg.Pool, n: number) =>
  Promise.all(Array.from({ length: n }, () => readWorld(pool)));

async function updates(pool: pg.Pool, n: number): Promise<World[]> {
  const worlds = await readWorlds(pool, n);
  for (const w of worlds) w.randomNumber = randomId();
  // One UPDATE per row, each its own (autocommit) transaction: concurrent requests cannot deadlock.
  await Promise.all(worlds.map((w) => pool.query(UPDATE_WORLD, [w.randomNumber, w.id])));
  return worlds;
}

async function fortunesPage(pool: pg.Pool): Promise<string> {
  const rows: Fortune[] = (await pool.query(SELECT_FORTUNES)).rows;
  rows.push({ id: 0, message: "Additional fortune added at request time." });
  rows.sort((a, b) => (a.message < b.message ? -1 : a.message > b.message ? 1 : 0));
  let html = "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>" +
    "<tr><th>id</th><th>message</th></tr>";
  for (const f of rows) html += `<tr><td>${f.id}</td><td>${escapeHtml(f.message)}</td></tr>`;
  return html + "</table></body></html>";
}

// The handler for the database paths, or null for a path that is not one of them.
// `send` is server.ts's reply; Deno.serve adds Date itself, not Server.
export function dbRoutes(send: Send) {
  const pool = openPool();
  const headers = { server: "deno" };
  const json = (value: unknown) => send(200, "application/json", JSON.stringify(value), headers);
  const routes: Record<string, (p: pg.Pool, params: URLSearchParams) => Promise<Response>> = {
    "/db": async (p) => json(await readWorld(p)),
    "/queries": async (p, params) => json(await readWorlds(p, queryCount(params))),
    "/updates": async (p, params) => json(await updates(p, queryCount(params))),
    "/fortunes": async (p) => send(200, "text/html; charset=utf-8", await fortunesPage(p), headers),
  };
  return (pathname: string) => {
    if (!PATHS.has(pathname)) return null;
    return async (params: URLSearchParams): Promise<Response> => {
      if (!pool) return send(503, "text/plain", "no database configured (DATABASE_URL is not set)", headers);
      try {
        return await routes[pathname](pool, params);
      } catch (err) {
        console.error(`deno: ${pathname}: ${(err as Error).message}`);
        return send(500, "text/plain", "Internal Server Error", headers);
      }
    };
  };
}
