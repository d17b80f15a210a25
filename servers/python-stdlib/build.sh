#!/bin/sh
# The row's one third-party dependency, the PostgreSQL driver (psycopg 3 and psycopg_pool), in a
# private virtual environment with exactly the pinned, hash-checked packages of requirements.txt
# (compiled from requirements.in with pip-compile --generate-hashes). The HTTP server itself stays
# the standard library's. Skipped when .venv was already made from this very requirements.txt.
set -eu
if [ -x .venv/bin/python ] && cmp -s requirements.txt .venv/requirements.stamp; then
    echo "python-stdlib: .venv is up to date"
    exit 0
fi
rm -rf .venv
python3 -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check --require-hashes --only-binary :all: -r requirements.txt
cp requirements.txt .venv/requirements.stamp
