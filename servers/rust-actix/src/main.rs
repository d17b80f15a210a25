//! serverbench contestant: actix-web 4. HttpServer starts $WORKERS worker
//! threads, each running its own single-threaded runtime (one event loop per
//! core); the acceptor hands new connections to the workers.

use std::env;
use std::path::PathBuf;
use std::process;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use actix_web::http::KeepAlive;
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use serde::Serialize;

const MAX_BODY: usize = 1024 * 1024;
const MAX_MS: u64 = 60_000;

static TENTH_COUNTER: AtomicU64 = AtomicU64::new(0);

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

struct Config {
    hello_file: PathBuf,
}

/// The integer value of query parameter `name` in 0..=max (`default` when
/// absent); Err for a non-integer or out-of-range value.
fn int_param(query: &str, name: &str, max: u64, default: u64) -> Result<u64, ()> {
    let mut value = None;
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k == name {
            value = Some(v);
        }
    }
    match value {
        None => Ok(default),
        Some(v) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
            v.parse::<u64>().ok().filter(|&n| n <= max).ok_or(())
        }
        Some(_) => Err(()),
    }
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
    let query = req.query_string();
    let (Ok(ms), Ok(bytes)) =
        (int_param(query, "ms", MAX_MS, 0), int_param(query, "bytes", MAX_BODY as u64, 0))
    else {
        return HttpResponse::BadRequest().content_type("text/plain").body("Bad Request");
    };
    if ms > 0 {
        actix_web::rt::time::sleep(Duration::from_millis(ms)).await; // a timer on this worker's loop
    }
    HttpResponse::Ok().content_type("text/plain").body(vec![b'x'; bytes as usize])
}

async fn tenth(req: HttpRequest) -> HttpResponse {
    let Ok(ms) = int_param(req.query_string(), "ms", MAX_MS, 2000) else {
        return HttpResponse::BadRequest().content_type("text/plain").body("Bad Request");
    };
    let n = TENTH_COUNTER.fetch_add(1, Ordering::SeqCst) + 1;
    if n % 10 == 0 && ms > 0 {
        actix_web::rt::time::sleep(Duration::from_millis(ms)).await;
    }
    HttpResponse::Ok().content_type("text/plain").body(n.to_string())
}

async fn echo(body: web::Bytes) -> HttpResponse {
    HttpResponse::Ok().content_type("application/octet-stream").body(body)
}

fn main() {
    let host = env::var("HOST").unwrap_or_else(|_| "127.0.0.1".to_string());
    let port: u16 = match env::var("PORT").map(|p| p.parse()) {
        Err(_) => 8080,
        Ok(Ok(p)) => p,
        Ok(Err(_)) => {
            eprintln!("rust-actix: invalid PORT");
            process::exit(2);
        }
    };
    let workers = env::var("WORKERS")
        .ok()
        .and_then(|w| w.parse::<usize>().ok())
        .filter(|&w| w > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let hello_file =
        PathBuf::from(env::var("HELLO_FILE").unwrap_or_else(|_| "../../assets/hello.html".to_string()));
    let config = web::Data::new(Config { hello_file });

    let result = actix_web::rt::System::new().block_on(async move {
        let server = HttpServer::new(move || {
            App::new()
                .app_data(config.clone())
                // The default body limit is 256 KiB; SPEC wants 1 MiB (beyond → 413).
                .app_data(web::PayloadConfig::new(MAX_BODY))
                // A resource whose routes do not match the method answers 405.
                .service(web::resource("/").route(web::get().to(hello)))
                .service(web::resource("/json").route(web::get().to(json)))
                .service(web::resource("/file").route(web::get().to(file)))
                .service(web::resource("/delay").route(web::get().to(delay)))
                .service(web::resource("/tenth").route(web::get().to(tenth)))
                .service(web::resource("/echo").route(web::post().to(echo)))
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
        let server = match server.bind((host.as_str(), port)) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("rust-actix: cannot bind {host}:{port}: {e}");
                process::exit(1);
            }
        };
        println!("rust-actix listening on {host}:{port} with {workers} workers");
        server.run().await
    });
    if let Err(e) = result {
        eprintln!("rust-actix: {e}");
        process::exit(1);
    }
}
