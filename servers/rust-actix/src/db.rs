//! The database paths (SPEC.md, "Database endpoints") the way actix-web users
//! write them: tokio-postgres through a deadpool-postgres pool, created once
//! in `main` and shared by every worker as `web::Data` (actix's documented
//! pattern for a pool). A worker's handler takes one pooled connection per
//! request; statements are prepared once per connection by deadpool-postgres'
//! `prepare_cached`. The reads of one request (and the writes of `/updates`)
//! are issued together and awaited with `try_join_all`, so tokio-postgres
//! pipelines them on that connection, each query with its own Sync (its own
//! implicit transaction).

use std::error::Error;

use actix_web::middleware::DefaultHeaders;
use actix_web::{web, HttpRequest, HttpResponse};
use askama::Template;
use deadpool_postgres::{Client, Manager, ManagerConfig, Pool, RecyclingMethod};
use futures_util::future::try_join_all;
use rust_contract::db::{queries_param, Database, ADDED_FORTUNE, WORLD_ROWS};
use serde::Serialize;
use tokio_postgres::NoTls;

const SELECT_WORLD: &str = "SELECT id, randomNumber FROM World WHERE id = $1";
const UPDATE_WORLD: &str = "UPDATE World SET randomNumber = $1 WHERE id = $2";
const SELECT_FORTUNE: &str = "SELECT id, message FROM Fortune";

/// What `$DATABASE_URL` looks like, for the line that rejects one.
const URL_FORM: &str = "postgres://user:password@host:port/db";

type DbResult<T> = Result<T, Box<dyn Error + Send + Sync>>;

/// The app data of the database paths: None without `$DATABASE_URL`.
pub type DbPool = Option<Pool>;

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

/// The pool for `$DATABASE_URL`, at most `$DB_POOL` connections for the whole
/// process (every worker shares it), opened lazily (deadpool connects on
/// demand). A URL tokio-postgres cannot read exits with status 2 and one line.
pub fn pool(db: &Database) -> Pool {
    let config: tokio_postgres::Config = db.url.parse().unwrap_or_else(|e| {
        eprintln!("rust-actix: DATABASE_URL is not a PostgreSQL URL ({e}); set it to {URL_FORM}");
        std::process::exit(2);
    });
    // RecyclingMethod::Fast is deadpool-postgres' default: no query when a connection is handed out.
    let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
    Pool::builder(manager).max_size(db.pool).build().expect("a pool without timeouts needs no runtime")
}

/// The four database routes, each GET only (another method: 405). SPEC wants
/// a `Server` header on their answers, which actix-web does not send by itself:
/// its DefaultHeaders middleware adds one to every answer of these resources.
pub fn routes(cfg: &mut web::ServiceConfig) {
    let server = || DefaultHeaders::new().add(("Server", "rust-actix"));
    cfg.service(web::resource("/db").wrap(server()).route(web::get().to(db)))
        .service(web::resource("/queries").wrap(server()).route(web::get().to(queries)))
        .service(web::resource("/fortunes").wrap(server()).route(web::get().to(fortunes)))
        .service(web::resource("/updates").wrap(server()).route(web::get().to(updates)));
}

/// Without `$DATABASE_URL` the database paths answer 503.
fn unavailable() -> HttpResponse {
    HttpResponse::ServiceUnavailable().content_type("text/plain").body("Service Unavailable")
}

/// The answer, or 500 (and a line on stderr) when the database failed.
fn respond(answered: DbResult<HttpResponse>) -> HttpResponse {
    answered.unwrap_or_else(|e| {
        eprintln!("rust-actix: database: {e}");
        HttpResponse::InternalServerError().finish()
    })
}

fn random_number() -> i32 {
    rand::random_range(1..=WORLD_ROWS)
}

fn json(value: &impl Serialize) -> DbResult<HttpResponse> {
    let body = serde_json::to_vec(value)?;
    Ok(HttpResponse::Ok().content_type("application/json").body(body))
}

/// `n` random rows, each read with its own SELECT; the n queries are in
/// flight together on `client` (pipelined).
async fn read_worlds(client: &Client, n: usize) -> DbResult<Vec<World>> {
    let select = &client.prepare_cached(SELECT_WORLD).await?;
    let ids: Vec<i32> = (0..n).map(|_| random_number()).collect();
    let rows = try_join_all(ids.iter().map(|id| async move { client.query_one(select, &[id]).await })).await?;
    Ok(rows.iter().map(|row| World { id: row.get(0), random_number: row.get(1) }).collect())
}

async fn read_one(pool: &Pool) -> DbResult<HttpResponse> {
    let client = pool.get().await?;
    let world = read_worlds(&client, 1).await?.pop().expect("one row read");
    json(&world)
}

async fn read_many(pool: &Pool, n: usize) -> DbResult<HttpResponse> {
    let client = pool.get().await?;
    json(&read_worlds(&client, n).await?)
}

/// Each row read with its own SELECT, given a new random number, and written
/// back with one UPDATE per row (all in flight together, each its own
/// transaction) before the answer.
async fn write_updates(pool: &Pool, n: usize) -> DbResult<HttpResponse> {
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

async fn render_fortunes(pool: &Pool) -> DbResult<HttpResponse> {
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
    Ok(HttpResponse::Ok().content_type("text/html; charset=utf-8").body(page))
}

// ---------------------------------------------------------------- handlers

async fn db(pool: web::Data<DbPool>) -> HttpResponse {
    let Some(pool) = pool.get_ref() else { return unavailable() };
    respond(read_one(pool).await)
}

async fn queries(req: HttpRequest, pool: web::Data<DbPool>) -> HttpResponse {
    let Some(pool) = pool.get_ref() else { return unavailable() };
    respond(read_many(pool, queries_param(req.query_string())).await)
}

async fn updates(req: HttpRequest, pool: web::Data<DbPool>) -> HttpResponse {
    let Some(pool) = pool.get_ref() else { return unavailable() };
    respond(write_updates(pool, queries_param(req.query_string())).await)
}

async fn fortunes(pool: web::Data<DbPool>) -> HttpResponse {
    let Some(pool) = pool.get_ref() else { return unavailable() };
    respond(render_fortunes(pool).await)
}
