//! The database paths (SPEC.md, "Database endpoints") with tokio-postgres
//! through a deadpool-postgres pool, as a tokio user deploys them. Each
//! request takes one pooled connection; statements are prepared once per
//! connection by deadpool-postgres' `prepare_cached`. The reads of one
//! request (and the writes of `/updates`) are issued together and awaited
//! with `try_join_all`, so tokio-postgres pipelines them on that connection,
//! each query with its own Sync (its own implicit transaction).

use std::error::Error;

use askama::Template;
use deadpool_postgres::{Client, Manager, ManagerConfig, Pool, RecyclingMethod};
use futures_util::future::try_join_all;
use rust_contract::db::{Database, DbQuery, ADDED_FORTUNE, WORLD_ROWS};
use rust_contract::http::Response;
use serde::Serialize;
use tokio_postgres::NoTls;

const SELECT_WORLD: &str = "SELECT id, randomNumber FROM World WHERE id = $1";
const UPDATE_WORLD: &str = "UPDATE World SET randomNumber = $1 WHERE id = $2";
const SELECT_FORTUNE: &str = "SELECT id, message FROM Fortune";

/// What `$DATABASE_URL` looks like, for the line that rejects one.
const URL_FORM: &str = "postgres://user:password@host:port/db";

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

/// The pool for `$DATABASE_URL`, at most `$DB_POOL` connections, opened
/// lazily (deadpool connects on demand). A URL tokio-postgres cannot read
/// exits with status 2 and one line naming it.
pub fn pool(db: &Database) -> Pool {
    let config: tokio_postgres::Config = db.url.parse().unwrap_or_else(|e| {
        eprintln!("rust-tokio: DATABASE_URL is not a PostgreSQL URL ({e}); set it to {URL_FORM}");
        std::process::exit(2);
    });
    // RecyclingMethod::Fast is deadpool-postgres' default: no query when a connection is handed out.
    let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
    Pool::builder(manager).max_size(db.pool).build().expect("a pool without timeouts needs no runtime")
}

/// Answers a database path; 503 without a database, 500 (and a line on
/// stderr) when the database fails.
pub async fn answer(query: DbQuery, pool: Option<&Pool>) -> Response {
    let Some(pool) = pool else { return Response::error(503) };
    let answered = match query {
        DbQuery::Db => single(pool).await,
        DbQuery::Queries(n) => queries(pool, n).await,
        DbQuery::Fortunes => fortunes(pool).await,
        DbQuery::Updates(n) => updates(pool, n).await,
    };
    answered.unwrap_or_else(|e| {
        eprintln!("rust-tokio: database: {e}");
        Response::error(500)
    })
}

fn random_number() -> i32 {
    rand::random_range(1..=WORLD_ROWS)
}

fn json(value: &impl Serialize) -> DbResult<Response> {
    Ok(Response::new(200, "application/json", serde_json::to_vec(value)?))
}

/// `n` random rows, each read with its own SELECT; the n queries are in
/// flight together on `client` (pipelined).
async fn read_worlds(client: &Client, n: usize) -> DbResult<Vec<World>> {
    let select = &client.prepare_cached(SELECT_WORLD).await?;
    let ids: Vec<i32> = (0..n).map(|_| random_number()).collect();
    let rows = try_join_all(ids.iter().map(|id| async move { client.query_one(select, &[id]).await })).await?;
    Ok(rows.iter().map(|row| World { id: row.get(0), random_number: row.get(1) }).collect())
}

async fn single(pool: &Pool) -> DbResult<Response> {
    let client = pool.get().await?;
    let world = read_worlds(&client, 1).await?.pop().expect("one row read");
    json(&world)
}

async fn queries(pool: &Pool, n: usize) -> DbResult<Response> {
    let client = pool.get().await?;
    json(&read_worlds(&client, n).await?)
}

/// Each row read with its own SELECT, given a new random number, and
/// written back with one UPDATE per row (all in flight together, each its
/// own transaction) before the answer.
async fn updates(pool: &Pool, n: usize) -> DbResult<Response> {
    let client = &pool.get().await?;
    let mut worlds = read_worlds(client, n).await?;
    for world in &mut worlds {
        world.random_number = random_number();
    }
    let update = &client.prepare_cached(UPDATE_WORLD).await?;
    let writes = worlds.iter().map(|w| async move { client.execute(update, &[&w.random_number, &w.id]).await });
    try_join_all(writes).await?;
    json(&worlds)
}

async fn fortunes(pool: &Pool) -> DbResult<Response> {
    let client = pool.get().await?;
    let select = client.prepare_cached(SELECT_FORTUNE).await?;
    let mut fortunes: Vec<Fortune> = client
        .query(&select, &[])
        .await?
        .iter()
        .map(|row| Fortune { id: row.get(0), message: row.get(1) })
        .collect();
    fortunes.push(Fortune { id: 0, message: ADDED_FORTUNE.to_string() });
    fortunes.sort_by(|a, b| a.message.cmp(&b.message));
    let page = FortunesPage { fortunes: &fortunes }.render()?;
    Ok(Response::new(200, "text/html; charset=utf-8", page.into_bytes()))
}
