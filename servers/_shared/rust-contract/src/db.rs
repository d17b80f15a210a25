//! SPEC's database endpoints, the parts that do not depend on a driver:
//! which endpoint a request asks for (`DbQuery::route`), the `queries`
//! clamp, and the database settings the harness passes (`Database`). Each
//! row talks to PostgreSQL with its own driver and pool, in its own src.
//! std only, like the rest of this crate.

use std::env;

use crate::http::{split_target, Response};

/// Rows of `World`: ids are 1..=WORLD_ROWS, and so are the random numbers.
pub const WORLD_ROWS: i32 = 10_000;
/// Most rows one `/queries` or `/updates` request reads.
pub const MAX_QUERIES: usize = 500;
/// The fortune `/fortunes` adds in the application, with id 0.
pub const ADDED_FORTUNE: &str = "Additional fortune added at request time.";

/// A database endpoint and, for `/queries` and `/updates`, how many rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbQuery {
    Db,
    Queries(usize),
    Fortunes,
    Updates(usize),
}

impl DbQuery {
    /// None when `target` is not a database path (the row routes it as
    /// before); Err holds the 405 (with `Allow: GET`) for another method.
    pub fn route(method: &str, target: &str) -> Option<Result<DbQuery, Response>> {
        let (path, query) = split_target(target);
        let found = match path {
            "/db" => DbQuery::Db,
            "/queries" => DbQuery::Queries(queries_param(query)),
            "/fortunes" => DbQuery::Fortunes,
            "/updates" => DbQuery::Updates(queries_param(query)),
            _ => return None,
        };
        if method != "GET" {
            let mut resp = Response::error(405);
            resp.allow = Some("GET");
            return Some(Err(resp));
        }
        Some(Ok(found))
    }
}

/// The `queries` parameter as TechEmpower reads it: clamped to
/// 1..=MAX_QUERIES; missing, empty, 0, negative or not a number count as 1.
/// The last one wins when repeated, as in `int_param`.
pub fn queries_param(query: &str) -> usize {
    let value = query.split('&').filter_map(|pair| pair.strip_prefix("queries=")).next_back();
    let Some(value) = value else { return 1 };
    match value.parse::<i64>() {
        Ok(n) => n.clamp(1, MAX_QUERIES as i64) as usize,
        // Digits too many for i64 are a number above 500.
        Err(_) if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => MAX_QUERIES,
        Err(_) => 1,
    }
}

/// `$DATABASE_URL` and `$DB_POOL`: where the database is and the most
/// connections this process may open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Database {
    pub url: String,
    pub pool: usize,
}

impl Database {
    /// None without `$DATABASE_URL` (the database paths then answer 503). A
    /// `$DB_POOL` that is not a whole number ≥ 1 exits with status 2 and one
    /// line on stderr naming it and the fix.
    pub fn from_env(row: &str) -> Option<Database> {
        Database::from_lookup(|key| env::var(key).ok()).unwrap_or_else(|msg| {
            eprintln!("{row}: {msg}");
            std::process::exit(2);
        })
    }

    fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<Option<Database>, String> {
        let Some(url) = var("DATABASE_URL").filter(|u| !u.is_empty()) else { return Ok(None) };
        let raw = var("DB_POOL").unwrap_or_default();
        match raw.parse::<usize>() {
            Ok(pool) if pool > 0 => Ok(Some(Database { url, pool })),
            _ => Err(format!(
                "DB_POOL={raw:?} is not a whole number ≥ 1; \
                 set it to the most database connections this process may open"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn queries_clamp() {
        for (query, n) in [
            ("", 1),
            ("queries=", 1),
            ("queries=0", 1),
            ("queries=-3", 1),
            ("queries=abc", 1),
            ("queries=1.5", 1),
            ("queries=1", 1),
            ("queries=20", 20),
            ("queries=500", 500),
            ("queries=501", 500),
            ("queries=99999999999999999999999", 500),
            ("queries=-99999999999999999999999", 1),
            ("x=7&queries=12", 12),
            ("queries=3&queries=4", 4),
            ("myqueries=9", 1),
        ] {
            assert_eq!(queries_param(query), n, "{query:?}");
        }
    }

    #[test]
    fn routes() {
        assert_eq!(DbQuery::route("GET", "/db").unwrap().unwrap(), DbQuery::Db);
        assert_eq!(DbQuery::route("GET", "/db?x=1").unwrap().unwrap(), DbQuery::Db);
        assert_eq!(DbQuery::route("GET", "/queries?queries=7").unwrap().unwrap(), DbQuery::Queries(7));
        assert_eq!(DbQuery::route("GET", "/queries").unwrap().unwrap(), DbQuery::Queries(1));
        assert_eq!(DbQuery::route("GET", "http://h/updates?queries=900").unwrap().unwrap(), DbQuery::Updates(500));
        assert_eq!(DbQuery::route("GET", "/fortunes").unwrap().unwrap(), DbQuery::Fortunes);
        let wrong = DbQuery::route("POST", "/db").unwrap().unwrap_err();
        assert_eq!((wrong.status, wrong.allow), (405, Some("GET")));
        for other in ["/", "/json", "/dbx", "/db/", "/fortune"] {
            assert!(DbQuery::route("GET", other).is_none(), "{other}");
        }
    }

    fn database(vars: &[(&str, &str)]) -> Result<Option<Database>, String> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Database::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn database_settings() {
        assert_eq!(database(&[("DB_POOL", "16")]), Ok(None));
        assert_eq!(database(&[("DATABASE_URL", ""), ("DB_POOL", "16")]), Ok(None));
        let url = "postgres://u:p@127.0.0.1:5432/hello_world";
        let db = database(&[("DATABASE_URL", url), ("DB_POOL", "4")]).unwrap().unwrap();
        assert_eq!(db, Database { url: url.into(), pool: 4 });
        for bad in [None, Some("0"), Some("-1"), Some("many"), Some("")] {
            let mut vars = vec![("DATABASE_URL", url)];
            vars.extend(bad.map(|b| ("DB_POOL", b)));
            let err = database(&vars).unwrap_err();
            assert!(err.starts_with("DB_POOL=") && err.contains("set it to"), "{err}");
        }
    }
}
