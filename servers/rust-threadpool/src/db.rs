//! The database paths (SPEC.md, "Database endpoints") with the blocking
//! `postgres` driver behind an r2d2 pool (r2d2_postgres). A pool thread
//! checks out one connection for the request and blocks on each query in
//! turn, one at a time. With more pool threads ($WORKERS) than connections
//! ($DB_POOL), the others wait in `Pool::get` for a connection to come back:
//! that is the model. Statements are prepared once per connection and kept
//! in the connection's r2d2 extensions, the place r2d2 documents for them.

use std::collections::HashMap;
use std::error::Error;

use askama::Template;
use r2d2::PooledConnection;
use r2d2_postgres::postgres::{NoTls, Statement};
use r2d2_postgres::PostgresConnectionManager;
use rust_contract::db::{Database, DbQuery, ADDED_FORTUNE, WORLD_ROWS};
use rust_contract::http::Response;
use serde::Serialize;

const SELECT_WORLD: &str = "SELECT id, randomNumber FROM World WHERE id = $1";
const UPDATE_WORLD: &str = "UPDATE World SET randomNumber = $1 WHERE id = $2";
const SELECT_FORTUNE: &str = "SELECT id, message FROM Fortune";

/// What `$DATABASE_URL` looks like, for the line that rejects one.
const URL_FORM: &str = "postgres://user:password@host:port/db";

pub type Pool = r2d2::Pool<PostgresConnectionManager<NoTls>>;
type Connection = PooledConnection<PostgresConnectionManager<NoTls>>;
type DbResult<T> = Result<T, Box<dyn Error + Send + Sync>>;

#[derive(Serialize)]
struct World {
    id: i32,
    #[serde(rename = "randomNumber")]
    random_number: i32,
}

struct Fortune {
    id: i32,
    message: String,
}

/// The fortunes page; askama escapes every `{{ }}` for HTML.
#[derive(Template)]
#[template(path = "fortunes.html")]
struct FortunesPage<'a> {
    fortunes: &'a [Fortune],
}

/// A connection's prepared statements, by SQL text.
#[derive(Default)]
struct Prepared(HashMap<&'static str, Statement>);

/// The pool for `$DATABASE_URL`, at most `$DB_POOL` connections. r2d2 opens
/// them at start (its default `min_idle` is the pool size) and, by default,
/// checks each one out with an empty query (`test_on_check_out`). A URL the
/// driver cannot read, or a database it cannot reach, exits with one line.
pub fn pool(db: &Database) -> Pool {
    let config = db.url.parse().unwrap_or_else(|e| {
        eprintln!("rust-threadpool: DATABASE_URL is not a PostgreSQL URL ({e}); set it to {URL_FORM}");
        std::process::exit(2);
    });
    let manager = PostgresConnectionManager::new(config, NoTls);
    let max_size = u32::try_from(db.pool).unwrap_or(u32::MAX);
    r2d2::Pool::builder().max_size(max_size).build(manager).unwrap_or_else(|e| {
        eprintln!("rust-threadpool: cannot open the database pool ({e}); check that DATABASE_URL's server is up");
        std::process::exit(1);
    })
}

/// Answers a database path; 503 without a database, 500 (and a line on
/// stderr) when the database fails.
pub fn answer(query: DbQuery, pool: Option<&Pool>) -> Response {
    let Some(pool) = pool else { return Response::error(503) };
    let answered = pool.get().map_err(Into::into).and_then(|mut conn| match query {
        DbQuery::Db => read_worlds(&mut conn, 1).and_then(|mut w| json(&w.pop().expect("one row read"))),
        DbQuery::Queries(n) => read_worlds(&mut conn, n).and_then(|w| json(&w)),
        DbQuery::Fortunes => fortunes(&mut conn),
        DbQuery::Updates(n) => updates(&mut conn, n),
    });
    answered.unwrap_or_else(|e| {
        eprintln!("rust-threadpool: database: {e}");
        Response::error(500)
    })
}

/// `sql` prepared on this connection: the first use prepares it, later ones reuse it.
fn prepared(conn: &mut Connection, sql: &'static str) -> DbResult<Statement> {
    if let Some(statement) = PooledConnection::extensions(conn).get::<Prepared>().and_then(|p| p.0.get(sql)) {
        return Ok(statement.clone());
    }
    let statement = conn.prepare(sql)?;
    let extensions = PooledConnection::extensions_mut(conn);
    if extensions.get::<Prepared>().is_none() {
        extensions.insert(Prepared::default());
    }
    let cache = extensions.get_mut::<Prepared>().expect("inserted above");
    cache.0.insert(sql, statement.clone());
    Ok(statement)
}

fn random_number() -> i32 {
    rand::random_range(1..=WORLD_ROWS)
}

fn json(value: &impl Serialize) -> DbResult<Response> {
    Ok(Response::new(200, "application/json", serde_json::to_vec(value)?))
}

/// `n` random rows, each read with its own SELECT, one after the other.
fn read_worlds(conn: &mut Connection, n: usize) -> DbResult<Vec<World>> {
    let select = prepared(conn, SELECT_WORLD)?;
    let mut worlds = Vec::with_capacity(n);
    for _ in 0..n {
        let row = conn.query_one(&select, &[&random_number()])?;
        worlds.push(World { id: row.get(0), random_number: row.get(1) });
    }
    Ok(worlds)
}

/// Each row read with its own SELECT, given a new random number, and
/// written back with one UPDATE per row (each its own transaction) before
/// the answer.
fn updates(conn: &mut Connection, n: usize) -> DbResult<Response> {
    let mut worlds = read_worlds(conn, n)?;
    let update = prepared(conn, UPDATE_WORLD)?;
    for world in &mut worlds {
        world.random_number = random_number();
        conn.execute(&update, &[&world.random_number, &world.id])?;
    }
    json(&worlds)
}

fn fortunes(conn: &mut Connection) -> DbResult<Response> {
    let select = prepared(conn, SELECT_FORTUNE)?;
    let mut fortunes: Vec<Fortune> = conn
        .query(&select, &[])?
        .iter()
        .map(|row| Fortune { id: row.get(0), message: row.get(1) })
        .collect();
    fortunes.push(Fortune { id: 0, message: ADDED_FORTUNE.to_string() });
    fortunes.sort_by(|a, b| a.message.cmp(&b.message));
    let page = FortunesPage { fortunes: &fortunes }.render()?;
    Ok(Response::new(200, "text/html; charset=utf-8", page.into_bytes()))
}
