# The database endpoints (SPEC.md, "Database endpoints") on Nim 1.6's standard
# db_postgres: libpq's blocking calls, so every query holds the one event loop
# (and with it every other connection) until PostgreSQL answers. One connection,
# opened at start: the loop runs one query at a time, so a second connection
# would never be used. Statements are prepared once on it and executed by name.
import std/[algorithm, httpcore, json, os, random, strutils, uri, xmltree]
import std/db_postgres

const
  WorldRows = 10_000
  MaxQueries = 500
  NoDatabase = "no database configured (DATABASE_URL is not set)"

type
  World = tuple[id, randomNumber: int]
  Fortune = tuple[id: int, message: string]

# The prepared statements' names (a SqlPrepared is its name): constants, so the
# handlers stay GC-safe, as asynchttpserver's callback must be.
const
  selectWorld = SqlPrepared("world")
  updateWorld = SqlPrepared("update")
  selectFortune = SqlPrepared("fortune")

var conn: DbConn      # nil without $DATABASE_URL: the database paths answer 503

# Opens the connection from $DATABASE_URL (libpq takes the URL as its conninfo);
# nothing without it. A database that cannot be reached ends the process.
proc openDatabase*() =
  let url = getEnv("DATABASE_URL")
  if url == "":
    return
  randomize()
  try:
    conn = open("", "", "", url)
    discard conn.prepare(selectWorld.string, sql"SELECT id, randomNumber FROM World WHERE id = $1", 1)
    discard conn.prepare(updateWorld.string, sql"UPDATE World SET randomNumber = $1 WHERE id = $2", 2)
    discard conn.prepare(selectFortune.string, sql"SELECT id, message FROM Fortune", 0)
  except DbError:
    stderr.writeLine("nim: cannot open the database (" & getCurrentExceptionMsg() & "); check DATABASE_URL")
    quit(2)

# ?queries=N clamped to 1..500; missing, empty, 0, negative or not a number is 1.
proc queryCount(query: string): int =
  result = 1
  for (k, v) in decodeQuery(query):
    if k == "queries":
      try:
        return clamp(parseInt(v), 1, MaxQueries)
      except ValueError:   # not a number, or too large for an int
        return (if v.len > 0 and v.allCharsInSet(Digits): MaxQueries else: 1)

proc randomId(): int = rand(1..WorldRows)

proc readWorld(): World =
  let row = conn.getRow(selectWorld, randomId())
  (parseInt(row[0]), parseInt(row[1]))

proc worldsJson(worlds: openArray[World]): string =
  var list = newJArray()
  for w in worlds:
    list.add(%*{"id": w.id, "randomNumber": w.randomNumber})
  $list

# /updates: each row read with its own SELECT, then each new value written back
# with its own UPDATE (autocommit: one statement per transaction).
proc updateWorlds(n: int): seq[World] =
  for i in 1..n:
    result.add(readWorld())
  for w in result.mitems:
    w.randomNumber = randomId()
    conn.exec(updateWorld, $w.randomNumber, $w.id)

# /fortunes: the rows plus the request-time one, sorted by message (byte order of
# UTF-8: code point order), escaped with xmltree.escape (& < > " ').
proc fortunesPage(): string =
  var fortunes: seq[Fortune] = @[(0, "Additional fortune added at request time.")]
  for row in conn.rows(selectFortune):
    fortunes.add((parseInt(row[0]), row[1]))
  fortunes.sort(proc (a, b: Fortune): int = cmp(a.message, b.message))
  result = "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>" &
           "<tr><th>id</th><th>message</th></tr>"
  for f in fortunes:
    result.add("<tr><td>" & $f.id & "</td><td>" & xmltree.escape(f.message) & "</td></tr>")
  result.add("</table></body></html>")

# The answer to a database path: (status, Content-Type, body).
proc dbAnswer*(path, query: string): (HttpCode, string, string) =
  if conn == nil:
    return (Http503, "text/plain", NoDatabase)
  try:
    case path
    of "/db":
      let w = readWorld()
      (Http200, "application/json", $(%*{"id": w.id, "randomNumber": w.randomNumber}))
    of "/queries":
      var worlds: seq[World]
      for i in 1..queryCount(query):
        worlds.add(readWorld())
      (Http200, "application/json", worldsJson(worlds))
    of "/updates":
      (Http200, "application/json", worldsJson(updateWorlds(queryCount(query))))
    else:
      (Http200, "text/html; charset=utf-8", fortunesPage())
  except DbError:
    (Http500, "text/plain", "database error: " & getCurrentExceptionMsg())
