-- Loading config files: error locations, the sandbox, --set overrides.
local helper = dofile((debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") or "") .. "helper.lua")
local config = require("config")

local GOOD = 'return { name = "m", heads_q = 4, head_dim = 8 }\n'

describe("config", function()
  local tmp
  setup(function() tmp = helper.tmpdir() end)
  teardown(function() helper.rmtree(tmp) end)

  local n = 0
  --- Writes src to a fresh file; returns its path.
  local function file(src)
    n = n + 1
    return helper.write_file(("%s/c%d.lua"):format(tmp, n), src)
  end

  --- Loads src expecting an error; checks it is one line starting with the
  -- file's path; returns the message.
  local function fails(src, overrides)
    local p = file(src)
    local cfg, err = config.load(p, overrides)
    assert.is_nil(cfg, "expected an error")
    assert.is_string(err)
    assert.is_nil(err:find("\n"), "not one line: " .. err)
    assert.equal(p, err:sub(1, #p), "does not start with the file name: " .. err)
    return err, p
  end

  --- Expects the error to point at line `line` of the file.
  local function fails_at(src, line, ...)
    local err, p = fails(src)
    assert.equal(("%s:%d: "):format(p, line), err:sub(1, #p + #tostring(line) + 3), err)
    for _, pat in ipairs({ ... }) do
      assert.truthy(err:find(pat, 1, true), ("expected '%s' in: %s"):format(pat, err))
    end
    return err
  end

  describe("files", function()
    it("loads a good config and normalizes it", function()
      local cfg = assert(config.load(file(GOOD)))
      assert.equal("m", cfg.name)
      assert.equal(4, cfg.heads_kv)
      assert.same({ "avx512", "avx2", "neon", "scalar" }, cfg.isa)
    end)

    it("loads every preset and test config", function()
      local dir = require("pl.dir")
      local files = dir.getfiles(helper.root .. "/configs", "*.lua")
      for _, f in ipairs(dir.getfiles(helper.root .. "/configs/test", "*.lua")) do files[#files + 1] = f end
      assert.is_true(#files >= 10)
      for _, f in ipairs(files) do
        local cfg, err = config.load(f)
        assert.is_table(cfg, err)
        assert.equal(f:match("([^/]+)%.lua$"), cfg.name)
      end
    end)

    it("can compute values with the safe libraries", function()
      local cfg = assert(config.load(file([[
local heads = 4 * 2
local names = {}
for i = 1, 3 do table.insert(names, ("p%d"):format(i)) end
return {
  name = table.concat(names, "_"):upper():lower(),
  heads_q = heads,
  head_dim = math.floor(math.sqrt(4096)),
  scale = 1 / math.sqrt(256),
  isa = { string.rep("x", 0) .. "scalar" },
}
]])))
      assert.equal("p1_p2_p3", cfg.name)
      assert.equal(8, cfg.heads_q)
      assert.equal(64, cfg.head_dim)
      assert.equal(1 / 16, cfg.scale)
      assert.same({ "scalar" }, cfg.isa)
    end)

    it("an unknown key points at its line, with did you mean", function()
      fails_at('return {\n  name = "m",\n  heads_q = 4,\n  head_dmi = 8,\n}\n', 4,
        "unknown key 'head_dmi'", "did you mean 'head_dim'?")
    end)

    it("a bad value points at the line of its key", function()
      fails_at('return {\n  name = "m",\n  heads_q = 6,\n  heads_kv = 4,\n  head_dim = 8,\n}\n', 4,
        "'heads_kv' (4) must divide 'heads_q' (6)")
      fails_at('return {\n  name = "m",\n  heads_q = 4,\n  head_dim = 8,\n\n  tile = { q = 8, kv = 24 },\n}\n', 6,
        "multiple of 16")
      fails_at('return {\n  name = "m",\n  heads_q = 4,\n  head_dim = 8,\n  mask = "keep",\n}\n', 5, "'mask'")
      fails_at('return {\n  name = "m",\n  heads_q = 4,\n  head_dim = 8,\n  window = { left = 1, rigth = 2 },\n}\n',
        5, "unknown field 'rigth'")
      fails_at('return {\n  name = "m-1",\n  heads_q = 4,\n  head_dim = 8,\n}\n', 2, "C identifier")
    end)

    it("a missing required key points at line 1", function()
      fails_at('return {\n  name = "m",\n  heads_q = 4,\n}\n', 1, "'head_dim' is required")
      fails_at('return {\n  heads_q = 4,\n  head_dim = 8,\n}\n', 1, "'name' is required")
    end)

    it("a config must return a table", function()
      fails_at("return 42\n", 1, "must return a table, got number")
      fails_at('return "gpt2"\n', 1, "got string")
      fails_at("local x = 1\n", 1, "got nil")
    end)

    it("syntax errors give the file and line", function()
      fails_at('return {\n  name = "m",\n  heads_q = = 4,\n}\n', 3)
      fails_at('return {\n  name = "m\n}\n', 2)
      fails_at("return {\n  name = 'm',\n", 3)
    end)

    it("a long path is not shortened in messages", function()
      local dir = tmp .. "/" .. ("a_rather_long_folder_name/"):rep(4)
      assert(require("pl.dir").makepath(dir))
      local p = helper.write_file(dir .. "my_model_config_with_a_long_name.lua",
        'return {\n  name = "m",\n  heads_q = = 4,\n}\n')
      local _, err = config.load(p)
      assert.equal(p .. ":3: ", err:sub(1, #p + 4))
      helper.write_file(p, 'return {\n  name = "m",\n  heads_q = nil .. 4,\n}\n')
      _, err = config.load(p)
      assert.equal(p .. ":3: ", err:sub(1, #p + 4))
      helper.write_file(p, 'return {\n  name = "m",\n  heads_q = 4,\n  head_dim = 8,\n  tile = 1,\n}\n')
      _, err = config.load(p)
      assert.equal(p .. ":5: ", err:sub(1, #p + 4))
      helper.write_file(p, 'local x = 1\nwhile true do x = x + 1 end\n')
      _, err = config.load(p)
      assert.equal(p .. ":2: ", err:sub(1, #p + 4))
    end)

    it("runtime errors in the config give the file and line", function()
      fails_at("local t = nil\nreturn { name = t.x }\n", 2)
      fails_at('error("my own message")\n', 1, "my own message")
      fails_at('assert(false, "asserted")\n', 1, "asserted")
    end)

    it("an error message with newlines still gives one line", function()
      fails('error("first\\nsecond\\n")\n')
      fails('error({})\n')
    end)

    it("a missing file", function()
      local p = tmp .. "/nope.lua"
      local cfg, err = config.load(p)
      assert.is_nil(cfg)
      assert.equal(p .. ": cannot read config", err:sub(1, #p + 20))
      assert.is_nil(err:find("\n"))
    end)

    it("a config larger than the size limit", function()
      local big = "return {\n" .. ("-- padding\n"):rep(math.floor(config.MAX_SOURCE_BYTES / 11) + 1) .. "}\n"
      local err = fails(big)
      assert.truthy(err:find("larger than", 1, true), err)
    end)

    it("rejects bytecode chunks", function()
      local chunk = string.dump(function() return { name = "m", heads_q = 4, head_dim = 8 } end)
      local err = fails(chunk)
      assert.truthy(err:find("precompiled (binary) chunks are not accepted", 1, true), err)
      -- also with a leading comment line, which load() would skip
      err = fails("#!/bin/sh\n" .. chunk)
      assert.truthy(err, err)
    end)
  end)

  describe("sandbox", function()
    --- The config `src` must fail with an error that names the file and
    -- matches `pattern` (a plain substring) when given.
    local function blocked(src, pattern)
      local err = fails(src)
      if pattern then assert.truthy(err:find(pattern, 1, true), ("expected '%s' in: %s"):format(pattern, err)) end
      return err
    end

    --- The config's `probe` expression is evaluated in the sandbox; it must be true.
    local function sandbox_says(probe)
      local cfg, err = config.load(file(("return { name = (%s) and 'yes' or 'no', heads_q = 1, head_dim = 1 }")
        :format(probe)))
      assert.is_table(cfg, err)
      assert.equal("yes", cfg.name, "sandbox check failed: " .. probe)
    end

    it("has no io, os, require, load, loadstring, dofile, loadfile, debug", function()
      for _, name in ipairs({ "io", "os", "require", "load", "loadstring", "dofile", "loadfile", "debug",
        "package", "collectgarbage", "module", "jit", "ffi", "bit", "coroutine" }) do
        sandbox_says(name .. " == nil")
      end
      blocked('io.write("x")\n', "io")
      blocked('os.execute("true")\n', "os")
      blocked('os.exit(3)\n', "os")
      blocked('local x = require("os")\n', "require")
      blocked('load("return 1")\n', "load")
      blocked('loadstring("return 1")\n', "loadstring")
      blocked('dofile("/etc/passwd")\n', "dofile")
      blocked('debug.sethook()\n', "debug")
    end)

    it("has no getmetatable, setmetatable, rawget, rawset, getfenv, setfenv, pcall", function()
      for _, name in ipairs({ "getmetatable", "setmetatable", "rawget", "rawset", "rawequal", "getfenv",
        "setfenv", "pcall", "xpcall", "newproxy", "_G" }) do
        sandbox_says(name .. " == nil")
      end
      blocked('local mt = getmetatable("")\n', "getmetatable")
      blocked('setmetatable({}, {})\n', "setmetatable")
    end)

    it("has no string.dump, through the string table or through string methods", function()
      sandbox_says("string.dump == nil")
      sandbox_says('("x").dump == nil')
      sandbox_says('("x").rep ~= nil and ("x").rep == string.rep')
      blocked('local f = ("x").dump(function() end)\n')
    end)

    it("string methods reach the sandbox's string table, not the real one", function()
      sandbox_says('("abc"):upper() == "ABC" and ("%d"):format(3) == "3"')
      -- a field planted on the sandbox's string table shows through methods...
      local cfg = assert(config.load(file([[
string.planted = function() return "m" end
return { name = ("x"):planted(), heads_q = 1, head_dim = 1 }
]])))
      assert.equal("m", cfg.name)
      -- ...but never in the real string library
      assert.is_nil(string.planted) -- luacheck: ignore 143
      assert.is_nil(("x").planted)
    end)

    it("restores the string metatable, also when the config fails", function()
      local smeta = getmetatable("")
      assert(config.load(file(GOOD)))
      assert.equal(string, smeta.__index)
      fails('local x = ("a"):rep(10)\nerror("boom")\n')
      assert.equal(string, smeta.__index)
      fails("while true do end\n")
      assert.equal(string, smeta.__index)
    end)

    it("cannot change the generator's libraries", function()
      local real = {}
      for k, v in pairs(string) do real[k] = v end
      local floor, concat, ipairs_ = math.floor, table.concat, ipairs
      local cfg, err = config.load(file([[
string.x = 1
string.format = nil
string.rep = function() return "pwned" end
math.floor = function() return 0 end
math.pi = 3
table.concat = nil
table.insert = error
ipairs = nil
tostring = nil
return { name = "m", heads_q = 4, head_dim = 8 }
]]))
      assert.is_table(cfg, err)
      assert.same(real, (function()
        local now = {}
        for k, v in pairs(string) do now[k] = v end
        return now
      end)())
      assert.is_nil(string.x) -- luacheck: ignore 143
      assert.equal(floor, math.floor)
      assert.equal(3.141592653589793, math.pi)
      assert.equal(concat, table.concat)
      assert.equal(ipairs_, ipairs)
      assert.equal("aab", ("a"):rep(2, "") .. ("b"):format())
      -- and the next config sees fresh libraries again
      local cfg2 = assert(config.load(file([[
return { name = string.format("m%d", math.floor(2.5)), heads_q = 4, head_dim = 8 }
]])))
      assert.equal("m2", cfg2.name)
    end)

    it("leaves no hook behind", function()
      fails("while true do end\n")
      assert.is_nil(debug.gethook())
      assert(config.load(file(GOOD)))
      assert.is_nil(debug.gethook())
    end)

    it("an endless loop stops at the instruction budget, quickly", function()
      local t0 = os.clock()
      local err = blocked("local x = 0\nwhile true do\n  x = x + 1\nend\n", "instruction budget")
      assert.truthy(err:find(":[234]: "), err) -- the line of the loop
      assert.is_true(os.clock() - t0 < 5, "took " .. (os.clock() - t0) .. " s")
      t0 = os.clock()
      blocked("while true do end\n", "instruction budget")
      blocked("local function f() return f() end\nreturn f()\n", "too long")
      assert.is_true(os.clock() - t0 < 10, "took " .. (os.clock() - t0) .. " s")
    end)

    it("endless recursion is an error, not a crash", function()
      blocked("local function f() return 1 + f() end\nreturn f()\n")
    end)

    it("a loop of slow instructions stops at the time limit", function()
      -- each instruction copies 60 KB: the instruction budget alone would take minutes
      local saved = config.MAX_SECONDS
      config.MAX_SECONDS = 0.5
      finally(function() config.MAX_SECONDS = saved end)
      local t0 = os.clock()
      blocked('local s = ("x"):rep(60000)\nwhile true do s = s .. "x" end\n', "too long")
      assert.is_true(os.clock() - t0 < 5, "took " .. (os.clock() - t0) .. " s")
    end)

    it("a loop building a huge table is stopped", function()
      local t0 = os.clock()
      blocked("local t = {}\nlocal i = 0\nwhile true do i = i + 1; t[i] = { i, i, i } end\n")
      blocked("local t = {}\nfor i = 1, 1e12 do t[i] = ('x'):rep(60000) .. i end\n")
      assert.is_true(os.clock() - t0 < 10, "took " .. (os.clock() - t0) .. " s")
    end)

    it("a loop doubling a string stops at the memory limit", function()
      local before = collectgarbage("count")
      local t0 = os.clock()
      local err = blocked('local s = "x"\nwhile true do s = s .. s end\n', "too much memory")
      assert.truthy(err:find(":2: ", 1, true), err)
      -- the same without a loop: each instruction is checked
      blocked('local s = ("x"):rep(60000)\n' .. ("s = s .. s .. s\n"):rep(30) .. "return {}\n",
        "too much memory")
      assert.is_true(os.clock() - t0 < 5, "took " .. (os.clock() - t0) .. " s")
      collectgarbage()
      assert.is_true(collectgarbage("count") - before < 16 * 1024, "memory kept after the failure")
    end)

    it("string.rep of a huge count", function()
      blocked('local s = string.rep("x", 1e12)\n', "string.rep result too large")
      blocked('local s = ("abc"):rep(1e9)\n', "string.rep result too large")
      blocked('local s = ("abc"):rep("1000000000")\n', "string.rep result too large")
      blocked('local s = string.rep("", 1e9, "separator")\n', "string.rep result too large")
      sandbox_says('#("ab"):rep(1000) == 2000')
    end)

    it("other library calls that build a huge string in one step", function()
      local big = 'local s = ("x"):rep(60000)\n'
      blocked(big .. "local t = {}\nfor i = 1, 1000 do t[i] = s end\nlocal r = table.concat(t)\n",
        "table.concat result too large")
      blocked(big .. 'local r = table.concat({ "a", "b" }, s:rep(1), 1, 3000)\n')
      blocked(big .. 'local r = s:gsub(".", s)\n', "string.gsub result too large")
      blocked(big .. 'local r = s:gsub("x", "%0%0%0")\n', "string.gsub result too large")
      blocked(big .. 'local r = s:gsub(".", { x = s })\n', "string.gsub result too large")
      blocked(big .. 'local r = s:gsub(".", function() return s end)\n', "string.gsub result too large")
      blocked(big .. 'local r = string.format(("%s"):rep(100), ' .. ("s, "):rep(99) .. "s)\n",
        "string.format result too large")
      -- ordinary use still works
      sandbox_says('("a-b-c"):gsub("-", "+") == "a+b+c"')
      sandbox_says('("hello"):gsub("l", { l = "L" }) == "heLLo"')
      sandbox_says('("abc"):gsub("%w", "%0%0", 2) == "aabbc"')
      sandbox_says('("x y"):gsub("%w", function(c) return c:upper() end) == "X Y"')
      sandbox_says('table.concat({ 1, "b", 3 }, ", ") == "1, b, 3"')
      sandbox_says('string.format("%5.2f|%q|%s", 3.14159, "q", 7) == " 3.14|\\"q\\"|7"')
    end)

    it("every attempt to reach outside is a one-line error at its line", function()
      for _, attempt in ipairs({
        'io.open("/etc/passwd")', 'os.remove("x")', 'require("os")', 'load("return 1")()',
        'dofile("/etc/passwd")', 'loadfile("/etc/passwd")', 'debug.getinfo(1)', 'string.dump(print)',
        '("x").dump(function() end)', 'rawset(_G, "x", 1)', 'setmetatable(_ENV or {}, {})',
        'getmetatable("").__index.dump(print)', 'coroutine.wrap(print)', 'package.loaded.os.exit()',
        'collectgarbage("stop")', '_G.string.dump(print)', 'jit.off()', 'print("x")', 'module("m")',
      }) do
        local err = blocked("local x = 1\nlocal y = " .. attempt .. "\nreturn {}\n")
        assert.truthy(err:find(":2: ", 1, true), err)
      end
    end)

    it("a pattern search that could run for hours is refused before it starts", function()
      -- the matcher runs in C, where the instruction hook cannot stop it
      local t0 = os.clock()
      local big = 'local s = ("a"):rep(60000)\n'
      local err = blocked(big .. 'local r = s:find(("a?"):rep(1e4) .. ("a"):rep(1e4))\n',
        "string.find: pattern too complex for a subject of 60000 bytes")
      assert.truthy(err:find(":2: ", 1, true), err)
      blocked(big .. 'local r = string.find(s, ".-.-.-.-.-.-.-.-b")\n', "string.find: pattern too complex")
      blocked(big .. 'local r = s:match("^a*a*a*b")\n', "string.match: pattern too complex")
      blocked(big .. 'for w in s:gmatch(".-.-b") do end\n', "string.gmatch: pattern too complex")
      blocked(big .. 'local r = s:gsub("a-a-b", "")\n', "string.gsub: pattern too complex")
      blocked(big .. 'local r = s:find("%b()%b()")\n', "pattern too complex")
      blocked(big .. 'local r = s:find("(a*)%1b")\n', "pattern too complex")
      blocked(big .. 'local r = s:find("[%a%d%s%p]*[%a%d%s%p]*b")\n', "pattern too complex")
      -- a plain search compares the needle at every place
      blocked(big .. 's = s .. s .. s .. s .. s .. s .. s .. s\nlocal r = s:find(("a"):rep(50000) .. "b", 1, true)\n',
        "string.find: pattern too complex")
      -- replacing the config's own string functions does not fool the check
      blocked(big .. 'string.byte = function() return 0 end\nstring.sub = function() return "" end\n'
        .. 'local r = s:find(".-.-b")\n', "pattern too complex")
      assert.is_true(os.clock() - t0 < 2, "took " .. (os.clock() - t0) .. " s")
      -- ordinary searches, also over long subjects, still work
      sandbox_says('("a-b"):match("^(%w+)%-(%w+)$") == "a"')
      sandbox_says('select(2, ("x_1 y_22"):gsub("(%a)_(%d+)", "%2%1")) == 2')
      sandbox_says('("[x]"):find("[]]") == 3 and ("a.b"):find(".", 1, true) == 2')
      sandbox_says('("abc def"):gsub("%f[%w]%w+", "W") == "W W"')
      sandbox_says('("(a(b))c"):match("%b()") == "(a(b))" and ("xyxy"):find("(xy)%1") == 1')
      sandbox_says('select(2, ("x"):rep(60000):gsub("x", "")) == 60000')
      sandbox_says('("x"):rep(60000):match("^x*$") ~= nil and ("x"):rep(60000):find("y", 1, true) == nil')
      sandbox_says('(function() local n = 0 for _ in ("a b c"):gmatch("%a") do n = n + 1 end return n == 3 end)()')
    end)

    it("a loop of allowed searches stops at the time limit", function()
      local saved = config.MAX_SECONDS
      config.MAX_SECONDS = 0.5
      finally(function() config.MAX_SECONDS = saved end)
      -- each search is under the budget (some ms), so only the clock stops
      -- the loop: the instruction budget alone would allow minutes of them
      local t0 = os.clock()
      blocked('local s = ("x"):rep(4900)\nwhile true do s:find("x*y") end\n', "more than 0.5 s")
      assert.is_true(os.clock() - t0 < 1.5, "took " .. (os.clock() - t0) .. " s")
    end)

    it("table.sort cannot hide long work in C", function()
      local t0 = os.clock()
      -- comparing long equal strings in C: ~20 s with the library's own sort
      blocked('local s = ("x"):rep(60000)\nlocal t = {}\nfor i = 1, 3e5 do t[i] = s end\ntable.sort(t)\n',
        "too long")
      blocked('local s = ("x"):rep(60000)\nlocal t = {}\nfor i = 1, 3e5 do t[i] = s end\n'
        .. 'table.sort(t, string.upper)\n')
      assert.is_true(os.clock() - t0 < 5, "took " .. (os.clock() - t0) .. " s")
      sandbox_says('(function() local t = { 3, 1, 2 } table.sort(t) return t[1] == 1 and t[3] == 3 end)()')
      sandbox_says('(function() local t = { "b", "c", "a" } table.sort(t, function(a, b) return a > b end) '
        .. 'return table.concat(t) == "cba" end)()')
      blocked('table.sort({ 1, "x", 2 })\n', "attempt to compare")
      blocked('table.sort({ 2, 1 }, 3)\n', "sort")
    end)

    it("the string metatable and the generator's string library are out of reach", function()
      sandbox_says('("").__index == nil and ("").__metatable == nil and ("").gsub ~= nil')
      blocked('local s = "x"\ns.upper = 1\n', "index")
      -- a config that rewrites its string table...
      local cfg, err = config.load(file([[
string.find = function() return 1 end
string.gsub = function() return "pwned", 0 end
string.format = function() return "pwned" end
string.__index = { upper = function() return "pwned" end }
return { name = ("m"):format() .. ("x"):find("y"), heads_q = 1, head_dim = 1 }
]]))
      assert.is_table(cfg, err)
      assert.equal("pwned1", cfg.name)
      -- ...changes nothing for the generator or for the next config
      assert.equal(string, getmetatable("").__index)
      assert.equal(nil, ("x"):find("y"))
      assert.equal("M", ("m"):upper())
      assert.equal("a_b", (("a-b"):gsub("-", "_")))
      sandbox_says('("x"):find("y") == nil and ("m"):format() == "m" and ("a"):upper() == "A"')
    end)

    it("puts the host's debug hook back", function()
      local calls = 0
      local function host_hook() calls = calls + 1 end
      debug.sethook(host_hook, "", 1e9)
      finally(function() debug.sethook() end)
      assert(config.load(file(GOOD)))
      assert.equal(host_hook, debug.gethook())
      fails("while true do end\n")
      local h, mask, count = debug.gethook()
      assert.equal(host_hook, h)
      assert.equal("", mask)
      assert.equal(1e9, count)
    end)

    it("deeply nested source is a one-line error, not a crash", function()
      -- (Lua 5.4 passes the parser's C stack overflow to the message handler
      -- in force: the test runner's here, the CLI's traceback in attngen)
      for _, src in ipairs({ "return " .. ("{"):rep(30000) .. ("}"):rep(30000) .. "\n",
        "return " .. ("("):rep(30000) .. "1" .. (")"):rep(30000) .. "\n",
        "local x = " .. ("- "):rep(30000) .. "1\n" }) do
        local err = fails(src)
        assert.truthy(err:find("syntax levels", 1, true) or err:find("C stack overflow", 1, true), err)
        assert.is_nil(err:find("traceback", 1, true), err)
      end
    end)

    it("parse_override: values are sandboxed too", function()
      local key, err = config.parse_override("heads_q=io.write('x')")
      assert.is_nil(key)
      assert.truthy(err:find("--set heads_q=io.write('x')", 1, true), err)
      key, err = config.parse_override("heads_q=(function() while true do end end)()")
      assert.is_nil(key)
      assert.truthy(err:find("instruction budget", 1, true), err)
      assert.is_nil(err:find("\n"))
    end)
  end)

  describe("--set overrides", function()
    local function set(text)
      local key, value = config.parse_override(text)
      assert.is_not_nil(key, value)
      return { key, value, text }
    end

    it("parse_override reads Lua literals", function()
      assert.same({ "heads_q", 8 }, { config.parse_override("heads_q=8") })
      assert.same({ "causal", true }, { config.parse_override("causal=true") })
      assert.same({ "causal", false }, { config.parse_override(" causal = false") })
      assert.same({ "scale", 0.5 }, { config.parse_override("scale=0.5") })
      assert.same({ "scale", 0.125 }, { config.parse_override("scale=1/8") })
      assert.same({ "mask", "bool" }, { config.parse_override('mask="bool"') })
      assert.same({ "mask", "bias" }, { config.parse_override("mask='bias'") })
      assert.same({ "window", { left = 3, right = 0 } }, { config.parse_override("window={left=3,right=0}") })
      assert.same({ "isa", { "scalar", "avx2" } }, { config.parse_override('isa={"scalar","avx2"}') })
      assert.same({ "tile", { q = 16, kv = 32 } }, { config.parse_override("tile={ q = 16, kv = 32 }") })
    end)

    it("parse_override rejects bad input with one line naming --set", function()
      for _, text in ipairs({ "heads_q=8x", "causal=ture", "heads_q", "=3", "heads_q=", "heads_q=nil",
        "window={left=3", "name=\"unterminated", "3=4" }) do
        local key, err = config.parse_override(text)
        assert.is_nil(key, text)
        assert.is_string(err)
        assert.is_nil(err:find("\n"), err)
        assert.truthy(err:find("--set", 1, true), err)
      end
      local _, err = config.parse_override("heads_q=8x")
      assert.equal("--set heads_q=8x:", err:sub(1, 17))
      _, err = config.parse_override("causal=ture")
      -- a bare name is a nil global in the sandbox
      assert.truthy(err:find("--set causal=ture", 1, true), err)
    end)

    it("overrides win over the file", function()
      local p = file('return {\n  name = "m",\n  heads_q = 8,\n  head_dim = 64,\n  causal = false,\n}\n')
      local cfg = assert(config.load(p, { set("heads_q=16"), set("heads_kv=4"), set("causal=true"),
        set("window={left=31,right=5}"), set('mask="bool"'), set("isa={'scalar'}") }))
      assert.equal(16, cfg.heads_q)
      assert.equal(4, cfg.heads_kv)
      assert.is_true(cfg.causal)
      assert.same({ left = 31, right = 0 }, cfg.window) -- causal folds in
      assert.equal("bool", cfg.mask)
      assert.same({ "scalar" }, cfg.isa)
    end)

    it("an override can fill a missing required key", function()
      local p = file('return { name = "m", heads_q = 8 }\n')
      assert.is_nil((config.load(p)))
      local cfg = assert(config.load(p, { set("head_dim=32") }))
      assert.equal(32, cfg.head_dim)
    end)

    it("unknown key: did you mean, naming --set", function()
      local p = file(GOOD)
      local cfg, err = config.load(p, { set("head_dmi=8") })
      assert.is_nil(cfg)
      assert.equal("--set head_dmi=8: unknown key 'head_dmi' (did you mean 'head_dim'?)", err)
    end)

    it("a bad value from an override names the --set", function()
      local p = file('return {\n  name = "m",\n  heads_q = 8,\n  head_dim = 64,\n}\n')
      local cfg, err = config.load(p, { set("heads_kv=3") })
      assert.is_nil(cfg)
      assert.equal("--set heads_kv=3: 'heads_kv' (3) must divide 'heads_q' (8)", err)
      cfg, err = config.load(p, { set("tile={q=8,kv=20}") })
      assert.is_nil(cfg)
      assert.truthy(err:find("^%-%-set tile={q=8,kv=20}: .*multiple of 16"), err)
      cfg, err = config.load(p, { set("sliding_window=8"), set("window={left=1}") })
      assert.is_nil(cfg)
      assert.truthy(err:find("--set sliding_window=8:", 1, true), err)
    end)

    it("a bad value left in the file still points at the file", function()
      local p = file('return {\n  name = "m",\n  heads_q = 8,\n  heads_kv = 3,\n  head_dim = 64,\n}\n')
      local cfg, err = config.load(p, { set("head_dim=32") })
      assert.is_nil(cfg)
      assert.equal(p .. ":4: 'heads_kv' (3) must divide 'heads_q' (8)", err)
    end)
  end)
end)
