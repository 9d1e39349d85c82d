--- The tuning file: the tiles `attngen tune` measured best, keyed by a
-- canonical descriptor of what they were measured for (CPU model, ISA, the
-- config without its tile, name and ISA list, shape bucket).  A JSON file
-- users can read, keep and commit:
--
--   { "version": 1,
--     "entries": { "<descriptor>": { "tile": {...}, "gflops": ..., "when": ..., ... } } }
--
-- The prefill bucket's tile is {q, kv}; the decode bucket's is {block, chunk}
-- (keys per pass and keys per split of the decode path).
--
-- Where it lives: $ATTNGEN_TUNE_DB when set ("none" turns tuning results off:
-- every tile = "auto" takes the planner's heuristic), else tune.json in the
-- build cache (util.cache_dir: $ATTNGEN_CACHE unless set otherwise).
-- Writers merge under a lock (a folder <file>.lock, taken with an atomic
-- mkdir) and publish with a rename, so concurrent tunes into one file lose
-- nothing and readers never see half a file.
local path = require("pl.path")
local lfs = require("lfs")
local json = require("dkjson")
local isa_registry = require("isa")
local util = require("util")
local version = require("version")

local M = {}

M.VERSION = 1
M.BUCKETS = { "prefill", "decode" }

--- Seconds a writer waits for the lock, and the age after which a lock left
-- by a killed process is taken over (a merge holds it for milliseconds).
M.LOCK_WAIT = 30
M.LOCK_STALE = 60

--- The file tuning results are read from and written to, or nil when
-- ATTNGEN_TUNE_DB=none turns them off.
function M.default_path()
  local env = os.getenv("ATTNGEN_TUNE_DB")
  if env == "none" then return nil end
  if env and env ~= "" then return env end
  return util.cache_dir() .. "/tune.json"
end

--- A file name for messages and generated headers: $HOME spelled "~".
function M.display_path(file)
  local home = os.getenv("HOME")
  if home and home ~= "" and home ~= "/" and file:sub(1, #home + 1) == home .. "/" then
    return "~" .. file:sub(#home + 1)
  end
  return file
end

-- ---- the host ---------------------------------------------------------------

local host_cache

--- How each ISA of the registry (isa.order) is detected: from the CPU's
-- flags (has(flag)) and the machine name (uname -m).  An ISA without a rule
-- here is taken as not available.
local DETECT = {
  avx512bf16 = function(has)
    return has("avx512f") and has("fma") and has("avx512bw") and has("avx512vl") and has("avx512_bf16")
  end,
  avx512 = function(has) return has("avx512f") and has("fma") end,
  avx2 = function(has) return has("avx2") and has("fma") end,
  neon = function(has, machine) return machine == "aarch64" or machine == "arm64" or has("asimd") end,
  scalar = function() return true end,
}

--- This machine: { cpu = "model name [family F model M]", isas = { avx512 = true, ... } }.
-- Read from /proc/cpuinfo; elsewhere from sysctl or uname.
function M.host()
  if host_cache then return host_cache end
  local info = util.read_file("/proc/cpuinfo") or ""
  local function field(name)
    local v = info:match("\n" .. name .. "%s*:%s*([^\n]*)") or info:match("^" .. name .. "%s*:%s*([^\n]*)")
    return v and v:gsub("%s+$", ""):gsub("%s+", " ") or nil
  end
  local cpu = field("model name")
  local family, model = field("cpu family"), field("model")
  if cpu and family and model then
    cpu = ("%s [family %s model %s]"):format(cpu, family, model)
  elseif not cpu and field("CPU implementer") then
    cpu = ("implementer %s part %s"):format(field("CPU implementer"), field("CPU part") or "?")
  end
  local _, uname = util.run_capture("uname -m")
  local machine = (uname or ""):match("[%w_]+") or ""
  if not cpu then
    local ok, out = util.run_capture("sysctl -n machdep.cpu.brand_string 2>/dev/null")
    cpu = ok and out:match("[^\n]+") or machine ~= "" and machine or "unknown CPU"
  end
  local flags = " " .. (field("flags") or field("Features") or "") .. " "
  local function has(f) return flags:find(" " .. f .. " ", 1, true) ~= nil end
  local isas = {}
  for _, n in ipairs(isa_registry.order) do
    if DETECT[n] and DETECT[n](has, machine) then isas[n] = true end
  end
  host_cache = { cpu = cpu, isas = isas }
  return host_cache
end

--- The best ISA of cfg.isa this machine runs (what the dispatcher picks), or nil.
function M.best_isa(cfg)
  local host = M.host()
  local listed = {}
  for _, n in ipairs(cfg.isa) do listed[n] = true end
  for _, n in ipairs(isa_registry.order) do
    if listed[n] and host.isas[n] then return n end
  end
  return nil
end

-- ---- descriptors ------------------------------------------------------------

--- The canonical descriptor of a tuning result: a Lua literal with sorted
-- keys of the CPU, the ISA, the bucket and the config without `tile`, `name`
-- and `isa` (the tile is what is tuned; the name changes only symbols; the
-- ISA is keyed on its own).  Equal for equal inputs whatever their key order.
function M.descriptor(cfg, bucket, isa, cpu)
  local c = {}
  for k, v in pairs(cfg) do
    if k ~= "tile" and k ~= "name" and k ~= "isa" then c[k] = v end
  end
  return util.serialize({ cpu = cpu, isa = isa, bucket = bucket, config = c })
end

-- ---- reading ----------------------------------------------------------------

local function object(t) return setmetatable(t or {}, { __jsontype = "object" }) end

--- An empty tuning file.
function M.empty() return { version = M.VERSION, entries = object() } end

--- Parses the text of a tuning file; returns the table or nil, err.
function M.decode(text, file)
  local db, _, err = json.decode(text, 1, json.null)
  if type(db) ~= "table" then
    return nil, ("%s: not a JSON tuning file (%s); fix or remove it, or set ATTNGEN_TUNE_DB=none")
      :format(file, tostring(err or "not an object"))
  end
  if db.version ~= M.VERSION or type(db.entries) ~= "table" then
    return nil, ("%s: not an attngen tuning file (expected {\"version\": %d, \"entries\": {...}});"
      .. " fix or remove it, or set ATTNGEN_TUNE_DB=none"):format(file, M.VERSION)
  end
  for k, e in pairs(db.entries) do
    if type(k) ~= "string" or type(e) ~= "table" then
      return nil, ("%s: entry %s is not an object"):format(file, tostring(k))
    end
  end
  object(db.entries)
  return db
end

--- Reads a tuning file; a missing file is an empty one.  Returns db or nil, err.
function M.load(file)
  if not path.exists(file) then return M.empty() end
  local text, err = util.read_file(file)
  if not text then return nil, ("%s: cannot read: %s"):format(file, tostring(err)) end
  return M.decode(text, file)
end

-- ---- writing ----------------------------------------------------------------

--- The JSON text of a db: keys sorted at every level, two-space indents.
function M.encode(db)
  local keys, seen = {}, {}
  local function collect(t)
    for k, v in pairs(t) do
      if type(k) == "string" and not seen[k] then
        seen[k] = true
        keys[#keys + 1] = k
      end
      if type(v) == "table" then collect(v) end
    end
  end
  collect(db)
  table.sort(keys)
  object(db.entries)
  return json.encode(db, { indent = true, keyorder = keys }) .. "\n"
end

local function sleep(seconds) util.execute(("sleep %s"):format(seconds)) end

--- Takes the lock of a tuning file; returns the lock folder or nil, err.
local function lock(file)
  local dir = file .. ".lock"
  local deadline = os.time() + M.LOCK_WAIT
  local vanished = 0
  while true do
    local ok, err = lfs.mkdir(dir)
    if ok then return dir end
    local attr = lfs.attributes(dir)
    if not attr then
      -- mkdir failed, yet there is no lock: its holder released it in between
      -- (try again at once), or, again and again, the folder takes no lock
      vanished = vanished + 1
      if vanished > 100 then
        return nil, ("cannot lock the tuning file %s: %s"):format(file, tostring(err))
      end
    elseif os.time() - attr.modification > M.LOCK_STALE then
      lfs.rmdir(dir) -- left by a killed process
    elseif os.time() > deadline then
      return nil, ("cannot lock the tuning file %s: %s has been held for %d s (remove it if no tune is running)")
        :format(file, dir, M.LOCK_WAIT)
    else
      sleep(0.05)
    end
  end
end

--- Checks before a long run that a tuning file can be written: its folder
-- exists (or is created) and takes a new file.  Returns true or nil, err.
function M.check_writable(file)
  local folder = path.dirname(file)
  if folder == "" then folder = "." end
  local ok, err = util.makepath(folder)
  if not ok then return nil, ("cannot write the tuning file %s: %s"):format(file, err) end
  local probe = ("%s/.tune-probe.%s"):format(folder, util.unique_suffix())
  local f, ferr = io.open(probe, "wb")
  if not f then
    return nil, ("cannot write the tuning file %s: %s"):format(file, tostring(ferr):gsub("^[^:]*: ", ""))
  end
  f:close()
  os.remove(probe)
  if path.isdir(file) then return nil, ("cannot write the tuning file %s: it is a folder"):format(file) end
  return true
end

--- Merges entries ({ [descriptor] = entry }) into a tuning file: under the
-- lock, re-reads the file, replaces or adds the entries, writes a temporary
-- file and renames it into place.  Returns true or nil, err (the file is then
-- as it was).
function M.merge(file, entries)
  local ok, err = M.check_writable(file)
  if not ok then return nil, err end
  local held, lerr = lock(file)
  if not held then return nil, lerr end
  local db, derr = M.load(file)
  if db then
    for k, e in pairs(entries) do db.entries[k] = e end
    ok, err = util.write_atomic(file, M.encode(db))
    if ok == nil then derr = ("cannot write the tuning file %s: %s"):format(file, tostring(err)) end
  end
  lfs.rmdir(held)
  if derr then return nil, derr end
  return true
end

-- ---- using results ----------------------------------------------------------

--- The reason a generated header gives for a tuned choice.
function M.reason(entry, file)
  return ("tuned on %s (%s, %.1f GFLOP/s)"):format(entry.cpu or "?", M.display_path(file),
    tonumber(entry.gflops) or 0)
end

local function int_in(x, lo, hi)
  return type(x) == "number" and x == math.floor(x) and x >= lo and x <= hi
end

--- Whether an entry's tile is one the planner takes (schema.lua's rules).
function M.valid_tile(bucket, t)
  if type(t) ~= "table" then return false end
  if bucket == "prefill" then
    return int_in(t.q, 1, 1024) and int_in(t.kv, 16, 4096) and t.kv % 16 == 0
  end
  return int_in(t.block, 1, 4096) and int_in(t.chunk, 1, 1048576)
end

--- The options planner.plan takes for cfg: for tile = "auto", the tuning
-- file's results for this CPU and the best ISA of cfg it runs (both buckets);
-- {} for a fixed tile, with tuning results off, or without a result.
-- Returns opts, or nil and a one-line error for an unreadable file.
function M.plan_options(cfg, file)
  if cfg.tile ~= "auto" then return {} end
  file = file or M.default_path()
  if not file or not path.isfile(file) then return {} end
  local db, err = M.load(file)
  if not db then return nil, err end
  local isa = M.best_isa(cfg)
  if not isa then return {} end
  local cpu = M.host().cpu
  local opts = {}
  for _, bucket in ipairs(M.BUCKETS) do
    local e = db.entries[M.descriptor(cfg, bucket, isa, cpu)]
    if e and bucket == "decode" and cfg.decode_max_q == 0 then e = nil end
    if e then
      if not M.valid_tile(bucket, e.tile) then
        return nil, ("%s: the %s entry for %s has an invalid tile; fix or remove it"):format(file, bucket, cfg.name)
      end
      if bucket == "prefill" then
        opts.tile = { q = e.tile.q, kv = e.tile.kv }
        opts.tile_reason = M.reason(e, file)
      else
        opts.decode_block, opts.decode_chunk = e.tile.block, e.tile.chunk
        opts.decode_reason = M.reason(e, file)
      end
    end
  end
  return opts
end

--- A new entry (the fields besides the tile are for people and reports).
function M.entry(fields)
  local e = object({ attngen = version.string, when = os.date("!%Y-%m-%dT%H:%M:%SZ") })
  for k, v in pairs(fields) do e[k] = v end
  return e
end

return M
