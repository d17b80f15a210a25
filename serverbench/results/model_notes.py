"""What each concurrency model (SPEC.md's `model` values) predicts, so a reader can tell an
expected result from a defect. Data only: the reports' model legend and the cores section use it."""
from __future__ import annotations

NOTES: dict[str, str] = {
    "thread-per-connection": (
        "One OS thread per connection: cheap while connections are few, then memory (a stack each) and "
        "scheduler switching grow with the connection count. In CPython the GIL lets one thread run "
        "Python at a time, so more cores do not help and can hurt (threads contend for the GIL)."),
    "thread-pool": (
        "A fixed pool of threads doing blocking I/O: throughput holds up to the pool's size, then "
        "connections beyond it wait for a free thread (stalls and timeouts past `max_connections`); "
        "a slow request holds its thread the whole time."),
    "event-loop": (
        "One thread multiplexes every connection: memory per connection is small, but it uses one core "
        "however many it is given, and any blocking call (a synchronous file read, heavy CPU work) "
        "stalls every connection on it."),
    "event-loop-per-core": (
        "One event loop per worker ($WORKERS), connections spread over them: scales with cores until the "
        "load is uneven across loops; a blocking call stalls only its own loop's connections."),
    "async-work-stealing": (
        "Tasks on a pool of worker threads that steal each other's queued work: scales with cores and "
        "balances uneven load, at the price of some cross-thread wake-ups; an elastic pool much larger "
        "than the CPUs it runs on spends its time switching threads."),
    "green-threads": (
        "Lightweight runtime-scheduled threads (goroutines) multiplexed onto a few OS threads: blocking "
        "code style at event-loop memory cost; scales with cores; a blocking system call parks one OS "
        "thread while the runtime keeps the others running."),
    "virtual-threads": (
        "JVM virtual threads on a carrier pool of one per core: a thread per connection without an OS "
        "thread each, so many idle connections are cheap; code that pins its carrier (synchronized I/O "
        "on older JDKs, native file reads) costs a carrier while it waits."),
    "actor": (
        "A lightweight process (actor) per connection on a preemptive scheduler per core (BEAM): steady "
        "latency under overload and isolation of failures, usually at a higher CPU cost per request "
        "than native code."),
    "process-pool": (
        "Several single-threaded processes sharing the listening socket: scales with cores like "
        "per-core loops but shares no memory, so RSS grows with the worker count and a per-process "
        "counter (/tenth) counts per process."),
}


def note(model: str) -> str:
    """The note for `model`, or an empty string for a model SPEC.md does not list."""
    return NOTES.get(model, "")

