"""python-fastapi: FastAPI on uvicorn (uvloop event loop, httptools parser).

uvicorn --workers $WORKERS forks that many processes, each with its own event loop and
its own copy of this module, so the /tenth counter is per process. The database endpoints use
asyncpg: each worker makes its own pool (max $DB_POOL, the harness's share for one process) on
its own event loop, in the lifespan, and each request borrows one connection for its queries.
"""
import asyncio
import gzip
import os
import random
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from operator import itemgetter

import asyncpg
from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, PlainTextResponse, Response
from fastapi.templating import Jinja2Templates

MAX_BODY = 1 << 20
MAX_DELAY_MS = 60000
HELLO_FILE = os.environ.get("HELLO_FILE") or os.path.join(os.path.dirname(__file__), "../../assets/hello.html")
XS = b"x" * MAX_BODY  # /delay bodies are slices of this
COMPRESS_FILE = os.environ.get("COMPRESS_FILE") or os.path.join(os.path.dirname(__file__), "../../assets/compress.json")
with open(COMPRESS_FILE, "rb") as f:  # /compress's document, read once per worker process at start
    COMPRESS_DOC = f.read()

SELECT_WORLD = "SELECT id, randomNumber FROM World WHERE id = $1"
UPDATE_WORLD = "UPDATE World SET randomNumber = $1 WHERE id = $2"
SELECT_FORTUNES = "SELECT id, message FROM Fortune"
EXTRA_FORTUNE = (0, "Additional fortune added at request time.")
INTEGER = re.compile(r"-?[0-9]+")
templates = Jinja2Templates(directory=os.path.join(os.path.dirname(__file__), "templates"))


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Per worker process: its asyncpg pool, or None without $DATABASE_URL (the db paths answer 503)."""
    url = os.environ.get("DATABASE_URL")
    size = os.environ.get("DB_POOL") or "16"
    if url and (not size.isdigit() or int(size) < 1):
        sys.exit(f"python-fastapi: DB_POOL={size!r} is not a positive integer; set it to the most connections to open")
    # A fixed size (min = max): asyncpg opens the connections here, before the worker serves.
    app.state.pool = await asyncpg.create_pool(url, min_size=int(size), max_size=int(size)) if url else None
    yield
    if app.state.pool is not None:
        await app.state.pool.close()


app = FastAPI(lifespan=lifespan)


class RefuseHTTP09:
    """llhttp (under httptools) takes a request line without a version ("GET /") as
    HTTP/0.9 and uvicorn would answer it; SPEC.md calls it malformed: 400, then close.
    HTTP/2 ("2", with $HTTP2: uvicorn --http2 over zttp, see run.sh) is served like 1.0 and 1.1."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["http_version"] not in ("1.0", "1.1", "2"):
            refusal = PlainTextResponse("Bad Request", status_code=400, headers={"Connection": "close"})
            return await refusal(scope, receive, send)
        return await self.app(scope, receive, send)


app.add_middleware(RefuseHTTP09)
counter = 0  # one event loop per process: increments never interleave


@app.exception_handler(RequestValidationError)
async def bad_parameters(request: Request, exc: RequestValidationError) -> Response:
    # FastAPI answers invalid query parameters with 422; SPEC.md asks for 400.
    return PlainTextResponse("Bad Request", status_code=400)


@app.get("/", response_class=PlainTextResponse)
async def hello() -> str:
    return "Hello, World!"


@app.get("/json")
async def json_message() -> dict:
    return {"message": "Hello, World!"}


@app.get("/file")
async def file() -> FileResponse:
    return FileResponse(HELLO_FILE, media_type="text/html")  # opened and read per request


@app.get("/delay")
async def delay(ms: int = Query(0, ge=0, le=MAX_DELAY_MS),
                size: int = Query(0, alias="bytes", ge=0, le=MAX_BODY)) -> Response:
    if ms:
        await asyncio.sleep(ms / 1000)
    return Response(XS[:size], media_type="text/plain")


@app.get("/tenth", response_class=PlainTextResponse)
async def tenth(ms: int = Query(2000, ge=0, le=MAX_DELAY_MS)) -> str:
    global counter
    counter += 1
    value = counter
    if value % 10 == 0 and ms:
        await asyncio.sleep(ms / 1000)
    return str(value)


# A plain `def`, as FastAPI's docs have it for blocking work ("Concurrency and async / await", "Path operation
# functions": a normal def "is run in an external threadpool that is then awaited, instead of being called directly
# (as it would block the server)"): Starlette's run_in_threadpool, on anyio's worker threads, while the event loop
# goes on; CPython's zlib runs deflate() with the GIL released.
@app.get("/compress")
def compress(kb: int = Query(ge=1, le=4096)) -> Response:
    body = gzip.compress(COMPRESS_DOC[:kb * 1024], compresslevel=6)  # compressed on every request
    return Response(body, media_type="application/json", headers={"Content-Encoding": "gzip"})


async def connection(request: Request) -> AsyncIterator[asyncpg.Connection]:
    """A connection borrowed from this process's pool for the request's queries."""
    pool = request.app.state.pool
    if pool is None:
        raise HTTPException(503, "no DATABASE_URL")
    async with pool.acquire() as conn:
        yield conn


def query_count(queries: str) -> int:
    """queries=N clamped to 1..500; missing, empty or not an integer → 1."""
    return min(max(int(queries), 1), 500) if INTEGER.fullmatch(queries) else 1


async def random_world(conn: asyncpg.Connection) -> dict:
    row = await conn.fetchrow(SELECT_WORLD, random.randint(1, 10000))
    return {"id": row[0], "randomNumber": row[1]}


@app.get("/db")
async def single_query(conn: asyncpg.Connection = Depends(connection)) -> dict:
    return await random_world(conn)


@app.get("/queries")
async def multiple_queries(queries: str = "", conn: asyncpg.Connection = Depends(connection)) -> list:
    return [await random_world(conn) for _ in range(query_count(queries))]


@app.get("/updates")
async def updates(queries: str = "", conn: asyncpg.Connection = Depends(connection)) -> list:
    worlds = []
    for _ in range(query_count(queries)):  # each row read, then written back, before the response
        world = await random_world(conn)
        world["randomNumber"] = random.randint(1, 10000)
        await conn.execute(UPDATE_WORLD, world["randomNumber"], world["id"])
        worlds.append(world)
    return worlds


@app.get("/fortunes")
async def fortunes(request: Request, conn: asyncpg.Connection = Depends(connection)) -> Response:
    rows = [tuple(row) for row in await conn.fetch(SELECT_FORTUNES)]
    rows.append(EXTRA_FORTUNE)
    rows.sort(key=itemgetter(1))
    # Jinja2Templates autoescapes .html templates; the response is text/html; charset=utf-8
    return templates.TemplateResponse(request, "fortunes.html", {"fortunes": rows})


@app.post("/echo")
async def echo(request: Request) -> Response:
    too_large = Response("Content Too Large", status_code=413, media_type="text/plain",
                         headers={"Connection": "close"})  # the unread rest can't be parsed
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        return too_large
    body = bytearray()
    async for chunk in request.stream():  # chunked bodies arrive decoded by httptools
        body += chunk
        if len(body) > MAX_BODY:
            return too_large
    return Response(bytes(body), media_type="application/octet-stream")
