"""Several machines: load shards on Dask distributed workers, and a server run on a worker.

load_cluster.py   a LocalCluster on 127.0.0.1 or a scheduler; one loadgen shard per worker, one
                  start instant (`LoadCluster`)
remote_server.py  `--server-on-cluster`: a Dask actor builds, verifies, starts and samples the
                  server on its machine, under a lease
(the exact merge of the shards' reports is rules/shards.py)

May import: paths, model, catalog, rules, processes, verify. Dask is imported only when a cluster is used.
Hands out `LoadCluster`, `run_remote` to run.
"""
