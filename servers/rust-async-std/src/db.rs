//! The database paths (SPEC.md, "Database endpoints") with sqlx on its
//! async-std runtime, as an async-std user deploys PostgreSQL: one `PgPool`
//! of at most `$DB_POOL` connections shared by every connection task. A
//! request takes one pooled connection and runs its queries on it one after
//! another (a sqlx connection has one query in flight at a time); sqlx
//! prepares each statement once per connection and keeps it in the
//! connection's statement cache.

use std::error::Error;

use askama::Template;
use rust_contract::db::{Database, DbQuery, ADDED_FORTUNE, WORLD_ROWS};
use rust_contract::http::Response;
use serde::Serialize;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};

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
/// lazily (`connect_lazy_with`: connections are made on demand); every other
/// option is sqlx's default. A URL sqlx cannot read exits with status 2 and
/// one line naming it.
pub fn pool(db: &Database) -> PgPool {
    let options: PgConnectOptions = db.url.parse().unwrap_or_else(|e| {
        eprintln!("rust-async-std: DATABASE_URL is not a PostgreSQL URL ({e}); set it to {URL_FORM}");
        std::process::exit(2);
    });
    let max = u32::try_from(db.pool).unwrap_or(u32::MAX);
    PgPoolOptions::new().max_connections(max).connect_lazy_with(options)
}

/// Answers a database path; 503 without a database, 500 (and a line on
/// stderr) when the database fails.
pub async fn answer(query: DbQuery, pool: Option<&PgPool>) -> Response {
    let Some(pool) = pool else { return Response::error(503) };
    let answered = match query {
        DbQuery::Db => single(pool).await,
        DbQuery::Queries(n) => queries(pool, n).await,
        DbQuery::Fortunes => fortunes(pool).await,
        DbQuery::Updates(n) => updates(pool, n).await,
    };
    answered.unwrap_or_else(|e| {
        eprintln!("rust-async-std: database: {e}");
        Response::error(500)
    })
}

fn random_number() -> i32 {
    rand::random_range(1..=WORLD_ROWS)
}

fn json(value: &impl Serialize) -> DbResult<Response> {
    Ok(Response::new(200, "application/json", serde_json::to_vec(value)?))
}

/// `n` random rows, each read with its own SELECT, one after another on `conn`.
async fn read_worlds(conn: &mut PgConnection, n: usize) -> DbResult<Vec<World>> {
    let mut worlds = Vec::with_capacity(n);
    for _ in 0..n {
        let (id, random_number) =
            sqlx::query_as::<_, (i32, i32)>(SELECT_WORLD).bind(random_number()).fetch_one(&mut *conn).await?;
        worlds.push(World { id, random_number });
    }
    Ok(worlds)
}

async fn single(pool: &PgPool) -> DbResult<Response> {
    let mut conn = pool.acquire().await?;
    let world = read_worlds(&mut conn, 1).await?.pop().expect("one row read");
    json(&world)
}

async fn queries(pool: &PgPool, n: usize) -> DbResult<Response> {
    let mut conn = pool.acquire().await?;
    json(&read_worlds(&mut conn, n).await?)
}

/// Each row read with its own SELECT, given a new random number, and
/// written back with one UPDATE per row (each its own transaction) before
/// the answer.
async fn updates(pool: &PgPool, n: usize) -> DbResult<Response> {
    let mut conn = pool.acquire().await?;
    let mut worlds = read_worlds(&mut conn, n).await?;
    for world in &mut worlds {
        world.random_number = random_number();
        sqlx::query(UPDATE_WORLD).bind(world.random_number).bind(world.id).execute(&mut *conn).await?;
    }
    json(&worlds)
}

async fn fortunes(pool: &PgPool) -> DbResult<Response> {
    let mut conn = pool.acquire().await?;
    let rows = sqlx::query_as::<_, (i32, String)>(SELECT_FORTUNE).fetch_all(&mut *conn).await?;
    let mut fortunes: Vec<Fortune> = rows.into_iter().map(|(id, message)| Fortune { id, message }).collect();
    fortunes.push(Fortune { id: 0, message: ADDED_FORTUNE.to_string() });
    fortunes.sort_by(|a, b| a.message.cmp(&b.message));
    let page = FortunesPage { fortunes: &fortunes }.render()?;
    Ok(Response::new(200, "text/html; charset=utf-8", page.into_bytes()))
}
