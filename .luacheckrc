-- luacheck configuration (make lint: luacheck generator tests).
-- std = "min": only what LuaJIT 2.1 and PUC Lua 5.1-5.4 all provide.
std = "min"
max_line_length = 120

-- the busted specs use its globals (describe, it, assert, stub, ...)
files["tests/spec"] = { std = "+busted" }

-- the sandbox picks per interpreter: setfenv/loadstring (LuaJIT, 5.1) or
-- load with an env (5.2+), unpack or table.unpack, and switches LuaJIT's
-- JIT off while its hook runs; each use is guarded by a test for the global
files["generator/config.lua"] = { read_globals = { "jit", "setfenv", "loadstring", "unpack" } }
