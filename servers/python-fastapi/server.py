"""python-fastapi: FastAPI on uvicorn (uvloop event loop, httptools parser).

uvicorn --workers $WORKERS forks that many processes, each with its own event loop and
its own copy of this module, so the /tenth counter is per process.
"""
import asyncio
import os

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, PlainTextResponse, Response

MAX_BODY = 1 << 20
MAX_DELAY_MS = 60000
HELLO_FILE = os.environ.get("HELLO_FILE") or os.path.join(os.path.dirname(__file__), "../../assets/hello.html")
XS = b"x" * MAX_BODY  # /delay bodies are slices of this

app = FastAPI()


class RefuseHTTP09:
    """llhttp (under httptools) takes a request line without a version ("GET /") as
    HTTP/0.9 and uvicorn would answer it; SPEC.md calls it malformed: 400, then close."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["http_version"] not in ("1.0", "1.1"):
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
