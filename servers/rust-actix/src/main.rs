//! serverbench contestant: actix-web 4. HttpServer starts $WORKERS worker
//! threads, each running its own single-threaded runtime (one event loop per
//! core); the acceptor hands new connections to the workers. With `$TLS_CERT`
//! and `$TLS_KEY` it serves them over rustls (actix-web's `rustls-0_23`).
//! The database paths are in `db` (tokio-postgres through a deadpool-postgres
//! pool that every worker shares as `web::Data`). `/compress` is gzipped with
//! flate2 on actix's blocking thread pool (web::block).
//! With `$HTTP2` (SPEC's HTTP/2) actix-web serves the same App over HTTP/2:
//! `h2c` through `bind_auto_h2c` (HTTP/2 with prior knowledge beside HTTP/1.1),
//! `h2` through the same `bind_rustls_0_23`, whose ALPN offers h2 and http/1.1.

mod db;

use std::path::PathBuf;
use std::process;
use std::time::Duration;

use actix_web::http::{header, KeepAlive};
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use rust_contract::compress::{self, gzip, Compress};
use rust_contract::db::Database;
use rust_contract::http2::Http2;
use rust_contract::{Delay, Env, Tenth, MAX_BODY};
use serde::Serialize;

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

struct Config {
    hello_file: PathBuf,
}

async fn hello() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body("Hello, World!")
}

async fn json() -> HttpResponse {
    let body = serde_json::to_vec(&Message { message: "Hello, World!" }).expect("serialize");
    HttpResponse::Ok().content_type("application/json").body(body)
}

async fn file(config: web::Data<Config>) -> HttpResponse {
    // Blocking file I/O goes to actix's blocking thread pool, off the event loop.
    let path = config.hello_file.clone();
    match web::block(move || std::fs::read(path)).await {
        Ok(Ok(bytes)) => HttpResponse::Ok().content_type("text/html").body(bytes),
        Ok(Err(e)) => {
            eprintln!("reading {}: {e}", config.hello_file.display());
            HttpResponse::InternalServerError().finish()
        }
        Err(_) => HttpResponse::InternalServerError().finish(),
    }
}

async fn delay(req: HttpRequest) -> HttpResponse {
    let Ok(delay) = Delay::parse(req.query_string()) else {
        return HttpResponse::BadRequest().content_type("text/plain").body("Bad Request");
    };
    if let Some(wait) = delay.wait {
        actix_web::rt::time::sleep(wait).await; // a timer on this worker's loop
    }
    HttpResponse::Ok().content_type("text/plain").body(delay.body())
}

async fn tenth(req: HttpRequest) -> HttpResponse {
    let Ok(tenth) = Tenth::next(req.query_string()) else {
        return HttpResponse::BadRequest().content_type("text/plain").body("Bad Request");
    };
    if let Some(wait) = tenth.wait {
        actix_web::rt::time::sleep(wait).await;
    }
    HttpResponse::Ok().content_type("text/plain").body(tenth.count.to_string())
}

async fn echo(body: web::Bytes) -> HttpResponse {
    HttpResponse::Ok().content_type("application/octet-stream").body(body)
}

async fn compress(req: HttpRequest) -> HttpResponse {
    let Ok(compress) = Compress::parse(req.query_string()) else {
        return HttpResponse::BadRequest().content_type("text/plain").body("Bad Request");
    };
    let Some(input) = compress.input() else {
        return HttpResponse::ServiceUnavailable().finish(); // no $COMPRESS_FILE
    };
    // CPU-heavy work goes to actix's blocking thread pool, off the worker's event loop, with
    // web::block (actix-web's docs: "Executes blocking function on a thread pool").
    match web::block(move || gzip(input)).await {
        Ok(gz) => HttpResponse::Ok()
            .content_type("application/json")
            .insert_header((header::CONTENT_ENCODING, "gzip"))
            .body(gz),
        Err(_) => HttpResponse::InternalServerError().finish(),
    }
}

fn main() {
    let Env { host, port, workers, hello_file } = Env::from_env("rust-actix");
    compress::load("rust-actix"); // $COMPRESS_FILE, read once (/compress)
    let config = web::Data::new(Config { hello_file });
    // Created once here and cloned into each worker's App: one pool of at most
    // $DB_POOL connections for the process (actix-web's documented way to
    // share a pool: web::Data, an Arc). None without $DATABASE_URL.
    let db_pool = web::Data::new(Database::from_env("rust-actix").as_ref().map(db::pool));

    let result = actix_web::rt::System::new().block_on(async move {
        let server = HttpServer::new(move || {
            App::new()
                .app_data(config.clone())
                .app_data(db_pool.clone())
                // The default body limit is 256 KiB; SPEC wants 1 MiB (beyond → 413).
                .app_data(web::PayloadConfig::new(MAX_BODY))
                // A resource whose routes do not match the method answers 405.
                .service(web::resource("/").route(web::get().to(hello)))
                .service(web::resource("/json").route(web::get().to(json)))
                .service(web::resource("/file").route(web::get().to(file)))
                .service(web::resource("/delay").route(web::get().to(delay)))
                .service(web::resource("/tenth").route(web::get().to(tenth)))
                .service(web::resource("/echo").route(web::post().to(echo)))
                .service(web::resource("/compress").route(web::get().to(compress)))
                .configure(db::routes)
        })
        .workers(workers)
        .backlog(4096)
        // Idle keep-alive connections stay open until the client closes them
        // (actix would otherwise drop them after 5 s), and slow request heads
        // are not cut off after 5 s: like the other contestants.
        .keep_alive(KeepAlive::Os)
        .client_request_timeout(Duration::ZERO)
        // SIGTERM starts a graceful stop that would wait up to 30 s for open
        // connections; SPEC wants an exit within 5 s.
        .shutdown_timeout(1);
        // SPEC's TLS: with $TLS_CERT/$TLS_KEY, the same server is bound with rustls instead.
        let tls = rust_contract::tls::server_config("rust-actix");
        let scheme = if tls.is_some() { "TLS" } else { "plaintext" };
        // SPEC's HTTP/2: HTTP2=h2c binds with bind_auto_h2c (a connection opening with the HTTP/2
        // preface is served as HTTP/2, any other as HTTP/1.1). Over TLS nothing differs: with the
        // http2 feature, bind_rustls_0_23 always puts ALPN "h2" before "http/1.1" (actix-web's docs:
        // "The "h2" protocol is also added when the `http2` feature is enabled"), so HTTP2=h2 and a
        // TLS start without it are the same server.
        let http2 = Http2::from_env("rust-actix", tls.is_some());
        let bound = match (tls, http2) {
            (None, Http2::H2c) => server.bind_auto_h2c((host.as_str(), port)),
            (None, _) => server.bind((host.as_str(), port)),
            (Some(config), _) => server.bind_rustls_0_23((host.as_str(), port), config),
        };
        let server = match bound {
            Ok(s) => s,
            Err(e) => {
                eprintln!("rust-actix: cannot bind {host}:{port}: {e}");
                process::exit(1);
            }
        };
        let protocol = if scheme == "TLS" { "ALPN h2, http/1.1" } else { http2.label() };
        println!("rust-actix listening on {host}:{port} ({scheme}, {protocol}) with {workers} workers");
        server.run().await
    });
    if let Err(e) = result {
        eprintln!("rust-actix: {e}");
        process::exit(1);
    }
}
