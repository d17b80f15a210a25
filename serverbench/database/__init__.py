"""The PostgreSQL behind the database workloads (issue 37): a cluster the harness runs itself, or an
existing one named by URL, loaded with TechEmpower's schema and data, and the facts stored with
results about either.

cluster.py  a cluster of the harness's own: initdb into a fresh folder, TechEmpower's settings,
            the postmaster a child of the harness (its PID held, dead with it), stopped by PID
schema.py   TechEmpower's World and Fortune tables, their data from a seed, loading them, and the
            check of an existing database (`--db-url`) with one line naming what is missing
facts.py    what a result records about the database: version, settings, where it ran
rowenv.py   what a db row is told: $DATABASE_URL, its parts, $DB_POOL (SPEC.md, "Database endpoints")

May import: paths, catalog (doctor's Postgres finder), processes (CPU pinning). Hands out
`ManagedPostgres`, `start`, `managed`, `sweep_stale`, `DatabaseError` (cluster), `check`,
`mask_url`, `world_rows`, `FORTUNES` (schema), `managed_facts`, `external_facts` (facts) to the CLI
and, later, run.
"""
