--- Compiling a config's kernel with the runtime and the tools (run, check,
-- bench) into the cache, keyed by a hash of the generated source, the
-- generator version and the compiler.
--
-- Concurrency: an entry is built in a private temporary folder and renamed
-- into place; a rename that loses the race finds the winner's folder and
-- uses it.  A folder in the cache is therefore always complete.
local path = require("pl.path")
local dir = require("pl.dir")
local planner = require("planner")
local render = require("render")
local presets = require("presets")
local util = require("util")
local version = require("version")

local M = {}

M.TOOLS = { "run", "check", "bench" }

local RUNTIME_SOURCES = { "attn_runtime.c", "attn_reference.c", "attn_npy.c", "attn_verify.c" }

function M.cache_dir()
  local c = os.getenv("ATTNGEN_CACHE")
  if c and c ~= "" then return c end
  local xdg = os.getenv("XDG_CACHE_HOME")
  if xdg and xdg ~= "" then return xdg .. "/attngen" end
  return (os.getenv("HOME") or "/tmp") .. "/.cache/attngen"
end

function M.compiler() return os.getenv("CC") or "cc" end

--- Two independent 32-bit polynomial hashes of a string, as 16 hex digits.
-- Integer arithmetic that stays exact in doubles, so every Lua agrees.
function M.hash(s)
  local h1, h2 = 5381, 52711
  for i = 1, #s do
    local b = s:byte(i)
    h1 = (h1 * 131 + b) % 4294967291
    h2 = (h2 * 65599 + b) % 4294967279
  end
  return ("%08x%08x"):format(h1, h2)
end

local compiler_id_cache
local function compiler_id()
  if not compiler_id_cache then
    local ok, out = util.run_capture(util.shell_quote(M.compiler()) .. " --version")
    if not ok then
      return nil, ("C compiler '%s' not found or not working (set CC, or run 'make bootstrap')"):format(M.compiler())
    end
    compiler_id_cache = out:match("[^\n]*")
  end
  return compiler_id_cache
end

local function read_all(files)
  local parts = {}
  for _, f in ipairs(files) do parts[#parts + 1] = util.read_file(f) or "" end
  return table.concat(parts)
end

--- Builds (or finds) the tools for a config.  Returns the entry folder,
-- holding the executables attn_run, attn_check, attn_bench; or nil, err.
function M.ensure(cfg, display, sets)
  local plan = planner.plan(cfg)
  local files = render.kernel_files(plan, presets.command(display, sets))
  local cid, cerr = compiler_id()
  if not cid then return nil, cerr end

  local rt = util.root .. "/runtime"
  local inputs = {}
  for _, f in ipairs(RUNTIME_SOURCES) do inputs[#inputs + 1] = rt .. "/" .. f end
  for _, t in ipairs(M.TOOLS) do inputs[#inputs + 1] = rt .. "/tools/attn_" .. t .. "_main.c" end
  local key = M.hash(files[1].text .. files[2].text .. read_all(inputs) .. version.string .. cid
    .. (os.getenv("CFLAGS") or ""))
  local cache = M.cache_dir()
  local entry = ("%s/%s-%s"):format(cache, cfg.name, key)
  if path.isfile(entry .. "/attn_" .. M.TOOLS[#M.TOOLS]) then return entry end

  local ok, err = util.makepath(cache)
  if not ok then return nil, err end
  local tmp = ("%s/.build-%s-%s"):format(cache, cfg.name, util.unique_suffix())
  ok, err = util.makepath(tmp)
  if not ok then return nil, err end
  local function fail(msg)
    dir.rmtree(tmp)
    return nil, msg
  end
  for _, f in ipairs(files) do
    local w, werr = util.write_atomic(tmp .. "/" .. f.name, f.text)
    if w == nil then return fail(werr) end
  end
  local w, werr = util.write_atomic(tmp .. "/entry.c",
    ("#include \"%s.h\"\nconst attn_kernel *const attn_entry_kernel = &%s;\n"):format(cfg.name, plan.kernel))
  if w == nil then return fail(werr) end

  local cc = util.shell_quote(M.compiler())
  local q = util.shell_quote
  local cflags = "-std=c99 -O2 -D_POSIX_C_SOURCE=200809L " .. (os.getenv("CFLAGS") or "")
  local common = ("%s %s -I%s -I%s"):format(cc, cflags, q(tmp), q(rt))
  local srcs = {}
  for _, f in ipairs(RUNTIME_SOURCES) do srcs[#srcs + 1] = q(rt .. "/" .. f) end
  -- one object for the kernel and the runtime, then a link per tool
  local function build(openmp)
    local omp = openmp and " -fopenmp" or ""
    local objs = {}
    local units = { q(tmp .. "/" .. cfg.name .. ".c"), q(tmp .. "/entry.c") }
    for _, src in ipairs(srcs) do units[#units + 1] = src end
    for i, src in ipairs(units) do
      local obj = q(("%s/o%d.o"):format(tmp, i))
      local okc, out = util.run_capture(("%s%s -c %s -o %s"):format(common, omp, src, obj))
      if not okc then return nil, out end
      objs[#objs + 1] = obj
    end
    for _, t in ipairs(M.TOOLS) do
      local function link(defines, libs)
        return util.run_capture(("%s%s%s %s %s -o %s%s -lm"):format(common, omp, defines,
          q(rt .. "/tools/attn_" .. t .. "_main.c"), table.concat(objs, " "), q(tmp .. "/attn_" .. t), libs))
      end
      -- the bench adds an unfused OpenBLAS baseline when OpenBLAS is installed
      local okl, out = false, nil
      if t == "bench" then okl = link(" -DATTN_HAVE_OPENBLAS", " -lopenblas") end
      if not okl then okl, out = link("", "") end
      if not okl then return nil, out end
    end
    return true
  end
  if not build(true) then
    local built, out = build(false) -- a compiler without OpenMP still builds a single-threaded kernel
    if not built then
      return fail(("compiling %s failed:\n%s"):format(cfg.name, out))
    end
  end
  -- publish: the rename is atomic; if another process won the race, use its entry
  local renamed = os.rename(tmp, entry)
  if not renamed and path.isdir(entry) and not path.isfile(entry .. "/attn_" .. M.TOOLS[#M.TOOLS]) then
    dir.rmtree(entry) -- an incomplete entry (left by a killed build of an older attngen): replace it
    renamed = os.rename(tmp, entry)
  end
  if not renamed then
    dir.rmtree(tmp)
    if not path.isfile(entry .. "/attn_" .. M.TOOLS[#M.TOOLS]) then
      return nil, ("cannot publish the build into %s"):format(entry)
    end
  end
  return entry
end

return M
