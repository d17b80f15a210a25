#!/bin/sh
# uvicorn --workers $WORKERS (a process per worker, uvloop + httptools). Over TLS when
# $TLS_CERT and $TLS_KEY are set (SPEC.md's TLS switch): uvicorn's own --ssl-certfile/--ssl-keyfile,
# its defaults otherwise (ssl.PROTOCOL_TLS_SERVER, OpenSSL's ciphers).
set -eu
tls=""
if [ -n "${TLS_CERT:-}" ] || [ -n "${TLS_KEY:-}" ]; then
    if [ -z "${TLS_CERT:-}" ] || [ -z "${TLS_KEY:-}" ]; then
        echo "python-fastapi: only one of TLS_CERT and TLS_KEY is set: set both (PEM certificate, PEM PKCS#8 key) or neither" >&2
        exit 2
    fi
    tls=1
    set -- --ssl-certfile "$TLS_CERT" --ssl-keyfile "$TLS_KEY"
fi

# SPEC.md's HTTP/2 switch: uvicorn's own --http2, which requires its zttp protocol (--http zttp; the zttp
# package, pinned in requirements.txt). uvicorn then serves every connection through its AutoZttpProtocol:
# cleartext, the HTTP/2 connection preface (prior knowledge, h2c) goes to HTTP/2 and any other first bytes
# to HTTP/1.1; over TLS, ALPN offers h2 and http/1.1 and the choice follows it. In this mode HTTP/1.1 on
# the same port is parsed by zttp, not httptools. zttp's SETTINGS stay its defaults (uvicorn passes none).
# Without $HTTP2 the command line is unchanged: --http httptools, HTTP/1.1 only.
http=httptools
case ${HTTP2:-} in
    "") ;;
    h2c)
        if [ -n "$tls" ]; then
            echo "python-fastapi: HTTP2=h2c is cleartext HTTP/2: unset TLS_CERT/TLS_KEY, or use HTTP2=h2" >&2
            exit 2
        fi
        http=zttp; set -- "$@" --http2 ;;
    h2)
        if [ -z "$tls" ]; then
            echo "python-fastapi: HTTP2=h2 is HTTP/2 over TLS: set TLS_CERT and TLS_KEY too (or use HTTP2=h2c)" >&2
            exit 2
        fi
        http=zttp; set -- "$@" --http2 ;;
    *)
        echo "python-fastapi: HTTP2 must be h2c or h2, not '$HTTP2'" >&2
        exit 2 ;;
esac
exec .venv/bin/uvicorn server:app --host "${HOST:-127.0.0.1}" --port "${PORT:-8080}" \
    --workers "${WORKERS:-$(nproc)}" --loop uvloop --http "$http" --no-access-log \
    --timeout-graceful-shutdown 2 "$@"
