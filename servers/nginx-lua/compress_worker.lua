-- nginx-lua: /compress's gzip, run by ngx.run_worker_thread on the "compress" thread pool (run.sh),
-- in that thread's own Lua VM. lua-zlib (Debian's lua-zlib, its Lua 5.1 build, which LuaJIT loads):
-- a deflate stream at level 6 with windowBits 15 + 16 (zlib writes the gzip header and trailer).
local zlib = require "zlib"

local function gzip(data)
    return zlib.deflate(6, 15 + 16)(data, "finish")
end

return { gzip = gzip }
