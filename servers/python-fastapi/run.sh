#!/bin/sh
# uvicorn --workers $WORKERS (a process per worker, uvloop + httptools). Over TLS when
# $TLS_CERT and $TLS_KEY are set (SPEC.md's TLS switch): uvicorn's own --ssl-certfile/--ssl-keyfile,
# its defaults otherwise (ssl.PROTOCOL_TLS_SERVER, OpenSSL's ciphers).
set -eu
if [ -n "${TLS_CERT:-}" ] || [ -n "${TLS_KEY:-}" ]; then
    if [ -z "${TLS_CERT:-}" ] || [ -z "${TLS_KEY:-}" ]; then
        echo "python-fastapi: only one of TLS_CERT and TLS_KEY is set: set both (PEM certificate, PEM PKCS#8 key) or neither" >&2
        exit 2
    fi
    set -- --ssl-certfile "$TLS_CERT" --ssl-keyfile "$TLS_KEY"
fi
exec .venv/bin/uvicorn server:app --host "${HOST:-127.0.0.1}" --port "${PORT:-8080}" \
    --workers "${WORKERS:-$(nproc)}" --loop uvloop --http httptools --no-access-log \
    --timeout-graceful-shutdown 2 "$@"
