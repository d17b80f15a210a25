#!/bin/sh
# Generates nginx.conf for $HOST/$PORT/$WORKERS into bin/run/<port>/ (pid file, temp paths and
# the config live there; nothing is written to /etc or /var) and runs nginx in the foreground.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
host=${HOST:-127.0.0.1}
port=${PORT:-8080}
workers=${WORKERS:-}
if [ -z "$workers" ]; then workers=$(nproc); fi   # nproc honours the affinity mask
: "${HELLO_FILE:=$here/hello.html}"
: "${COMPRESS_FILE:=$here/../../assets/compress.json}"
export HELLO_FILE COMPRESS_FILE
case $host in *:*) listen="[$host]:$port" ;; *) listen="$host:$port" ;; esac

# SPEC.md's TLS switch: with $TLS_CERT and $TLS_KEY, the same server on nginx's ssl listener.
# Debian 12's nginx 1.22 still enables TLS 1.0/1.1 by default; ssl_protocols is set to the
# default nginx itself adopted in 1.23.4. Session cache, tickets and ciphers stay nginx's defaults.
tls=""
if [ -n "${TLS_CERT:-}" ] || [ -n "${TLS_KEY:-}" ]; then
    if [ -z "${TLS_CERT:-}" ] || [ -z "${TLS_KEY:-}" ]; then
        echo "nginx-lua: only one of TLS_CERT and TLS_KEY is set: set both (PEM certificate, PEM PKCS#8 key) or neither" >&2
        exit 2
    fi
    listen="$listen ssl"
    tls="ssl_certificate $TLS_CERT;
        ssl_certificate_key $TLS_KEY;
        ssl_protocols TLSv1.2 TLSv1.3;"
fi

# SPEC.md's HTTP/2 switch: nginx's own ngx_http_v2_module (Debian 12's nginx 1.22 is built --with-http_v2_module).
# nginx 1.22 enables it per listener: `listen ... http2` alone is h2c with prior knowledge (the connection
# preface, no Upgrade); with `ssl` too, ALPN offers h2 and http/1.1. (nginx >= 1.25.1 spells it `http2 on;`.)
# Its SETTINGS stay nginx's defaults (http2_max_concurrent_streams 128, windows, frame size).
case ${HTTP2:-} in
    "") ;;
    h2c)
        if [ -n "$tls" ]; then
            echo "nginx-lua: HTTP2=h2c is cleartext HTTP/2: unset TLS_CERT/TLS_KEY, or use HTTP2=h2" >&2
            exit 2
        fi
        listen="$listen http2" ;;
    h2)
        if [ -z "$tls" ]; then
            echo "nginx-lua: HTTP2=h2 is HTTP/2 over TLS: set TLS_CERT and TLS_KEY too (or use HTTP2=h2c)" >&2
            exit 2
        fi
        listen="$listen http2" ;;
    *)
        echo "nginx-lua: HTTP2 must be h2c or h2, not '$HTTP2'" >&2
        exit 2 ;;
esac

# File descriptors: as many connections per worker as the hard limit allows.
nofile=$(ulimit -Hn)
if [ "$nofile" = unlimited ] || [ "$nofile" -gt 65536 ]; then nofile=65536; fi
conns=$((nofile - 64))

dir=$here/bin/run/$port
mkdir -p "$dir"
# nginx's master drops workers to "nobody" when started as root; keep them as the invoking
# user instead so the row behaves the same whoever starts it.
user_line=""
if [ "$(id -u)" = 0 ]; then user_line="user root;"; fi

cat > "$dir/nginx.conf" <<CONF
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;

daemon off;
master_process on;
$user_line
worker_processes $workers;
worker_rlimit_nofile $nofile;
pid $dir/nginx.pid;
error_log stderr warn;
env HELLO_FILE;
env COMPRESS_FILE;
# /compress's gzip runs here (ngx.run_worker_thread): a pool per worker process, of the size of nginx's own
# default pool (thread_pool default threads=32 max_queue=65536)
thread_pool compress threads=32;

events {
    worker_connections $conns;
}

http {
    access_log off;
    client_body_temp_path $dir/client_body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;

    # nginx closes a keep-alive connection after 1000 requests by default; SPEC wants
    # persistent connections, so the limit is lifted.
    keepalive_requests 100000000;
    # POST /echo: bodies up to 1 MiB, kept in memory; larger ones get nginx's 413.
    client_max_body_size 1m;
    client_body_buffer_size 1m;

    lua_shared_dict counter 64k;   # the /tenth counter, shared by all worker processes
    lua_package_path "$here/?.lua;;";
    init_by_lua_block { require "app" }

    server {
        listen $listen;
        $tls
        # HTTP/0.9 simple requests ("GET /") would get a headerless answer: close instead.
        if (\$server_protocol = "") { return 444; }

        location = /      { content_by_lua_block { require("app").root() } }
        location = /json  { content_by_lua_block { require("app").json() } }
        location = /file  { content_by_lua_block { require("app").file() } }
        location = /delay { content_by_lua_block { require("app").delay() } }
        location = /tenth { content_by_lua_block { require("app").tenth() } }
        location = /echo  { content_by_lua_block { require("app").echo() } }
        location = /compress { content_by_lua_block { require("app").compress() } }
        location /        { return 404; }
    }
}
CONF

exec nginx -p "$dir" -c "$dir/nginx.conf" -e stderr
