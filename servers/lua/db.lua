-- lua: the database endpoints (SPEC.md, "Database endpoints") on LuaSQL (luasql.postgres, Debian's
-- lua-sql-postgres over libpq). LuaSQL is blocking: while a query is out the one Copas loop waits
-- for it, so one connection is all this process can use ($DB_POOL is at least 1). LuaSQL has no
-- parameter binding and no prepared statements: conn:execute sends the statement text (libpq's
-- PQexec), the id written into it as an integer literal.
local driver = require "luasql.postgres"
local cjson = require "cjson"

local WORLD_ROWS = 10000
local MAX_QUERIES = 500
local ADDED_FORTUNE = "Additional fortune added at request time."
local HTML_ESCAPES = { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;" }

local M = {}
M.paths = { ["/db"] = true, ["/queries"] = true, ["/fortunes"] = true, ["/updates"] = true }

local url = os.getenv("DATABASE_URL")
local env = driver.postgres()
local conn   -- opened by the first database request; dropped after an error, reopened by the next

math.randomseed(os.time())   -- Lua 5.2 starts every process from the same seed

local function execute(sql)
  if not conn then
    local c, err = env:connect(url)   -- libpq takes the URL as its conninfo
    if not c then error(err, 0) end
    conn = c
  end
  local res, err = conn:execute(sql)
  if not res then
    conn:close()
    conn = nil
    error(err, 0)
  end
  return res
end

-- ?queries=N clamped to 1..500; missing, empty, 0, negative or not an integer → 1.
local function query_count(query)
  local n
  for pair in query:gmatch("[^&]+") do
    local k, v = pair:match("^([^=]*)=?(.*)$")
    if k == "queries" then
      n = v:match("^[+-]?%d+$") and tonumber(v) or 1
      break
    end
  end
  if not n or n < 1 then return 1 end
  return math.min(n, MAX_QUERIES)
end

-- LuaSQL hands every column back as a string; randomnumber comes lower-cased (unquoted names fold).
local function read_world()
  local cur = execute("SELECT id, randomNumber FROM World WHERE id = " .. math.random(WORLD_ROWS))
  local row = cur:fetch({}, "a")
  cur:close()
  return { id = tonumber(row.id), randomNumber = tonumber(row.randomnumber) }
end

-- Each row its own SELECT, one after the other on the one connection.
local function read_worlds(n)
  local worlds = {}
  for i = 1, n do worlds[i] = read_world() end
  return worlds
end

local function updates(n)
  local worlds = read_worlds(n)
  for _, w in ipairs(worlds) do
    w.randomNumber = math.random(WORLD_ROWS)
    -- One UPDATE per row, each its own (autocommit) transaction: concurrent requests cannot deadlock.
    execute(string.format("UPDATE World SET randomNumber = %d WHERE id = %d", w.randomNumber, w.id))
  end
  return worlds
end

local function fortunes_page()
  local cur = execute("SELECT id, message FROM Fortune")
  local rows = {}
  local row = cur:fetch({}, "a")
  while row do
    rows[#rows + 1] = { id = row.id, message = row.message }
    row = cur:fetch({}, "a")
  end
  cur:close()
  rows[#rows + 1] = { id = "0", message = ADDED_FORTUNE }
  -- Lua compares strings with strcoll; the process keeps the C locale, so this is byte (UTF-8 code point) order
  table.sort(rows, function(a, b) return a.message < b.message end)
  local html = { "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>",
    "<tr><th>id</th><th>message</th></tr>" }
  for _, f in ipairs(rows) do
    html[#html + 1] = "<tr><td>" .. f.id .. "</td><td>" .. f.message:gsub("[&<>\"']", HTML_ESCAPES) ..
      "</td></tr>"
  end
  html[#html + 1] = "</table></body></html>"
  return table.concat(html)
end

local ROUTES = {
  ["/db"] = function() return "application/json", cjson.encode(read_world()) end,
  ["/queries"] = function(query) return "application/json", cjson.encode(read_worlds(query_count(query))) end,
  ["/updates"] = function(query) return "application/json", cjson.encode(updates(query_count(query))) end,
  ["/fortunes"] = function() return "text/html; charset=utf-8", fortunes_page() end,
}

-- Answers a database path (one of M.paths): status, content type, body.
function M.handle(path, query)
  if not url or url == "" then
    return 503, "text/plain", "no database configured (DATABASE_URL is not set)"
  end
  local ok, ctype, body = pcall(ROUTES[path], query)
  if not ok then
    io.stderr:write("lua: ", path, ": ", tostring(ctype), "\n")
    return 500, "text/plain", "Internal Server Error"
  end
  return 200, ctype, body
end

return M
