"""What there is to measure, and how to make it runnable: the first stage of manifest → build →
verify → run → store → report.

manifests.py    `servers/*/server.toml` (pydantic) and loading: `load_catalog`, `Manifest`, `select`
workloads.py    `workloads/*.toml`: `Workload`, `Point`, `load_workloads`, `select`, `parse_duration`
kinds.py        the workload kinds, once: which rules each follows and what it is ranked by
environment.py  the environment a row's build/run/version commands see
doctor.py       toolchains present or missing, per step (build, run)
install.py      apt/npm installs of what a row needs (root only)
build.py        build commands, cached by folder hash, with logs
left_out.py     rows the published benchmarks compared that are not measured here, and why
bundle.py       the harness, loadgen and built rows as one archive for a bench machine
wheels.py       the harness's Python packages as wheels for the bench machine's Python (no index there)

May import: paths, model. Hands out manifests, workloads and built rows to every later stage.
"""
