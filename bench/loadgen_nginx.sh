# Sourced by the loadgen benchmarks: a throw-away nginx that answers
# `return 200 "Hello, World!"`, with its own prefix under a temp dir, pinned
# with taskset, and stopped by PID when the calling script exits.
#   nginx_start PORT CPU [CERT KEY]   -> sets NGINX_PID, NGINX_DIR; with a PEM certificate and
#                                        key it serves TLS 1.3 on PORT (nginx's `ssl`) instead
#   nginx_stop
#   busy_s; nginx_ticks; others_s BUSY_BEFORE NGINX_BEFORE CLIENT_CPU_S
#     -> CPU seconds that other work took during a measurement (the machine is shared)

nginx_start() {
    local port=$1 cpu=$2 cert=${3:-} key=${4:-} ssl="" tls_conf=""
    command -v nginx >/dev/null || { echo "nginx not found: apt-get install nginx" >&2; exit 1; }
    NGINX_DIR=$(mktemp -d /tmp/loadgen-nginx.XXXXXX)
    mkdir -p "$NGINX_DIR/logs"
    if [ -n "$cert" ]; then
        cp "$cert" "$NGINX_DIR/server.pem"
        cp "$key" "$NGINX_DIR/server.key"
        ssl=" ssl"
        tls_conf="ssl_certificate $NGINX_DIR/server.pem; ssl_certificate_key $NGINX_DIR/server.key; ssl_protocols TLSv1.3;"
    fi
    cat >"$NGINX_DIR/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $NGINX_DIR/nginx.pid;
error_log $NGINX_DIR/logs/error.log warn;
worker_rlimit_nofile 20000;
events { worker_connections 16000; multi_accept on; }
http {
    access_log off;
    keepalive_requests 1000000000;
    keepalive_timeout 600s;
    client_body_temp_path $NGINX_DIR/tmp_body;
    proxy_temp_path $NGINX_DIR/tmp_proxy;
    fastcgi_temp_path $NGINX_DIR/tmp_fcgi;
    uwsgi_temp_path $NGINX_DIR/tmp_uwsgi;
    scgi_temp_path $NGINX_DIR/tmp_scgi;
    server {
        listen 127.0.0.1:$port$ssl backlog=16384;
        $tls_conf
        location / { default_type text/plain; return 200 "Hello, World!"; }
        location = /nginx-status { stub_status; }   # requests nginx counted (loadgen_vs_wrk.sh)
    }
}
CONF
    taskset -c "$cpu" nginx -p "$NGINX_DIR" -e "$NGINX_DIR/logs/error.log" -c "$NGINX_DIR/nginx.conf" &
    NGINX_PID=$!
    trap nginx_stop EXIT INT TERM
    for _ in $(seq 1 50); do
        if curl -s -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null || \
           (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    echo "nginx did not start on port $port; see $NGINX_DIR/logs/error.log" >&2
    cat "$NGINX_DIR/logs/error.log" >&2
    exit 1
}

nginx_stop() {
    if [ -n "${NGINX_PID:-}" ] && kill -0 "$NGINX_PID" 2>/dev/null; then
        kill "$NGINX_PID"   # the master stops its worker
        wait "$NGINX_PID" 2>/dev/null || true
    fi
    NGINX_PID=
    [ -n "${NGINX_DIR:-}" ] && rm -rf "$NGINX_DIR"
    NGINX_DIR=
}

# CPU seconds the machine has been busy: wall time on every CPU less idle and iowait (which the
# kernel keeps exactly; the busy fields of /proc/stat are sampled at ticks, and a client woken
# by timers can dodge them), and nginx's CPU ticks (master and workers)
busy_s() {
    awk -v n="$(getconf _NPROCESSORS_ONLN)" -v hz="$(getconf CLK_TCK)" -v t="$(date +%s.%N)" \
        '/^cpu / {printf "%.3f", t * n - ($5 + $6) / hz; exit}' /proc/stat
}
nginx_ticks() {
    local p
    for p in "$NGINX_PID" $(pgrep -P "$NGINX_PID"); do awk '{print $14 + $15}' "/proc/$p/stat"; done |
        awk '{s += $1} END {print s + 0}'
}

# What else ran during a measurement (or the hypervisor took): the machine's busy CPU seconds
# since BUSY_BEFORE less nginx's since NGINX_BEFORE and the client's (~0.01 s resolution).
# Other engineers' builds and tests on the same CPUs change the figures; this says when.
others_s() {
    awk -v b="$1" -v n="$2" -v c="$3" -v B="$(busy_s)" -v N="$(nginx_ticks)" -v hz="$(getconf CLK_TCK)" \
        'BEGIN {printf "%.2f", B - b - (N - n) / hz - c}'
}
