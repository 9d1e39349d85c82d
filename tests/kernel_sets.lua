-- tests/kernel_sets.lua - which configs the sanitizer, valgrind, fuzz and
-- AArch64 runs build, derived from the config files instead of kept by hand.
--
--   lua tests/kernel_sets.lua PURPOSE CONFIG.lua...          the names, one a line
--   lua tests/kernel_sets.lua --explain PURPOSE CONFIG.lua...  with the features of each
--
-- CONFIG files under a folder named "test" (configs/test/) are test configs,
-- the others presets.  For a purpose, the pool of configs it draws from is
-- searched for the smallest set that covers every feature some config of the
-- pool has (see FEATURES); among sets of that size, the one with the most
-- (config, feature) pairs (more combinations exercised), then the cheapest
-- (heads_q * (head_dim + head_dim_v) summed), then the first by name.  The
-- names come out sorted, so the same files always give the same lines.
--
-- Purposes (PURPOSES below): sanitize, sanitize-presets, sanitize-presets-full,
-- run, fuzz, neon, neon_scalar, matmul_bf16, backward.
-- Config files are data: each is loaded in an empty environment.  Usable as
-- a module too: require("kernel_sets").select(purpose, files).
-- Runs on LuaJIT, Lua 5.1 and Lua 5.4.
-- the family tables (generator/families/), found from this file's path
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\][^/\\]*$") or "."
package.path = here .. "/../generator/?.lua;" .. here .. "/../generator/?/init.lua;" .. package.path
local families = require("families")

local M = {}

--- The family table of a config (a table, defaults not applied); a kind
-- the registry does not know is read as the default family's.
function M.family(c) return families.of(c) or families.get(families.DEFAULT) end

-- Each feature: a name and whether a config (a table, defaults not applied)
-- has it.  A new kernel family or storage type is a feature of its own: a
-- family's own features are its table's check.features, added to these.
-- The dims of a config (heads, head dims, the attention layer's) are its
-- family's check.dims (the classic kinds' one head, Ds and Dh stand in for
-- the heads and head dims).
local function dims(c) return M.family(c).check.dims(c) end
local function window_side(c, side)
  if type(c.window) == "table" and c.window[side] ~= nil then return c.window[side] end
  if side == "left" and type(c.sliding_window) == "number" then return c.sliding_window - 1 end
  return -1
end
local function sparse_gathered(c)
  return type(c.sparse) == "table"
    and not (c.alibi or c.rel_bias or (c.mask or "none") ~= "none" or c.weights or c.dropout)
end
local function dtypes(c)
  if type(c.dtype) == "table" then return { c.dtype.q, c.dtype.kv, c.dtype.o } end
  return { c.dtype }
end

M.FEATURES = {
  { "causal", function(c) return c.causal ~= nil and c.causal ~= false end },
  -- positions i instead of i + Lk_b - Lq
  { "top_left", function(c) return c.causal == "top_left" end },
  { "chunk", function(c) return c.chunk ~= nil end },
  -- the Sparse Transformer patterns: each pattern's keys gathered into panels of their own, and
  -- the per-key tests on the key tiles that a pattern keeps with what is indexed by a key's
  -- position (ALiBi, a mask tensor, the weights, dropout)
  { "sparse_strided", function(c) return sparse_gathered(c) and c.sparse.pattern == "strided" end },
  { "sparse_fixed", function(c) return sparse_gathered(c) and c.sparse.pattern == "fixed" end },
  { "sparse_tiles", function(c) return type(c.sparse) == "table" and not sparse_gathered(c) end },
  -- outputs and draws beyond O: the weights P, the dropout mask, the entropy E
  { "weights", function(c) return c.weights == true end },
  { "dropout", function(c) return c.dropout == true end },
  -- a learned logit per head in every row's softmax; the query rows scaled by their position
  { "sinks", function(c) return c.sinks == true end },
  { "temperature", function(c) return c.temperature ~= nil end },
  -- V read from the first head_dim_v values of each K row (one cache tensor)
  { "shared_kv", function(c) return c.shared_kv == true end },
  -- rotary embeddings of the query rows: angles from the generated frequencies, or the caller's
  -- cos / sin table (rope = {table = true}; the harnesses pass one of exactly rope_rows rows)
  { "rope", function(c) return type(c.rope) == "table" and not c.rope.table end },
  { "rope_table", function(c) return type(c.rope) == "table" and c.rope.table == true end },
  -- the RMS norm of the query rows (and appended key rows) times run-time weights
  { "qk_norm", function(c) return type(c.qk_norm) == "table" end },
  { "entropy", function(c) return c.entropy == true end },
  -- the backward pass: dQ, dK and dV beside the forward
  { "backward", function(c) return c.backward == true end },
  { "mask_bool", function(c) return c.mask == "bool" end },
  { "mask_bias", function(c) return c.mask == "bias" end },
  { "padding", function(c) return c.padding == true end },
  { "global_tokens", function(c) return (c.global_tokens or 0) > 0 end },
  { "window", function(c) return window_side(c, "left") >= 0 or window_side(c, "right") >= 0 end },
  -- a window that reaches past the query (both sides: Longformer-style)
  { "window_right", function(c) return window_side(c, "right") > 0 end },
  { "softcap", function(c) return c.softcap ~= nil end },
  { "alibi", function(c) return c.alibi == true end },
  -- a learned relative position bias, by kind (T5's buckets, Shaw et al.'s clipped distances)
  { "rel_t5", function(c) return type(c.rel_bias) == "table" and c.rel_bias.kind == "t5" end },
  { "rel_clipped", function(c) return type(c.rel_bias) == "table" and c.rel_bias.kind == "clipped" end },
  -- a head dim that is no multiple of 4 lanes: vector tails on every ISA
  { "odd_head_dim", function(c)
    local d = dims(c)
    return d.d % 4 ~= 0 or d.dv % 4 ~= 0 or d.da % 4 ~= 0
  end },
  { "head_dim_v", function(c) return dims(c).dv ~= dims(c).d end },
  { "gqa", function(c) return dims(c).heads_kv < dims(c).heads_q end },
  { "mqa", function(c) return dims(c).heads_kv == 1 and dims(c).heads_q > 1 end },
  { "small_tiles", function(c) return type(c.tile) == "table" end },
  -- the prefill path's keys packed and run a chunk at a time, the rows' sums carried across
  { "prefill_chunks", function(c) return (c.prefill_chunk or 0) > 0 end },
  -- K/V in pools of pages through a block table, key-major and head-major
  { "paged", function(c) return type(c.paged) == "table" end },
  { "paged_hnd", function(c) return type(c.paged) == "table" and c.paged.order == "HND" end },
}

local function generic_features(c)
  local out = {}
  -- (the registry's families have features of their own: check.features)
  if not families.of(c) then out[#out + 1] = "kind_" .. tostring(c.kind) end
  for _, t in ipairs(dtypes(c)) do
    if t ~= nil and t ~= "f32" then out[#out + 1] = "dtype_" .. tostring(t) end
  end
  if c.matmul ~= nil and c.matmul ~= "f32" then out[#out + 1] = "matmul_" .. tostring(c.matmul) end
  return out
end

--- The features of a config table, as a set and a sorted list.
function M.features(c)
  local set, list = {}, {}
  local function add(f)
    if not set[f] then
      set[f] = true
      list[#list + 1] = f
    end
  end
  for _, f in ipairs(M.FEATURES) do
    if f[2](c) then add(f[1]) end
  end
  for _, f in ipairs(M.family(c).check.features) do
    if f[2](c) then add(f[1]) end
  end
  for _, f in ipairs(generic_features(c)) do add(f) end
  table.sort(list)
  return set, list
end


local function has_isa(c, isa)
  if type(c.isa) ~= "table" then return true end -- default: every ISA
  for _, i in ipairs(c.isa) do
    if i == isa then return true end
  end
  return false
end

-- pool: "test" or "preset"; features: "all" (every feature of the pool), a
-- list, or a function of a feature's name (the pool's features it accepts);
-- filter: which configs of the pool may be picked at all; every: take every
-- config that passes the filter (no covering)
M.PURPOSES = {
  -- Makefile SAN_TESTS: the check tool of test configs under ASan + UBSan
  sanitize = { pool = "test", features = "all" },
  -- Makefile SAN_PRESETS: the same, for presets (model-sized shapes): every
  -- kernel family and the latent head (the options and storage types are
  -- sanitized on the test configs above, which cover every feature of the
  -- presets); make test-full takes sanitize-presets-full, every feature at
  -- model size too
  ["sanitize-presets"] = { pool = "preset", features = function(f)
    if f:match("^kind_") or f == "shared_kv" then return true end
    for _, n in ipairs(families.names) do -- a family's own features (luong_concat, linear_state)
      if f == n or f:sub(1, #n + 1) == n .. "_" then return true end
    end
    return false
  end },
  ["sanitize-presets-full"] = { pool = "preset", features = "all" },
  -- tests/run.sh's strict compiles (clang x86-64, gcc AArch64): presets that
  -- cover every feature of the pool (every preset's x86-64 gcc build is
  -- strict in the kernel tests); make test-full compiles every preset
  strict = { pool = "preset", features = "all" },
  -- Makefile SAN_RUN and VG_RUN: the run tool on .npy inputs, which reads
  -- seqlens_k, both kinds of mask and the sinks from files
  run = { pool = "test", features = { "padding", "mask_bool", "mask_bias", "sinks" } },
  -- Makefile FUZZ_KERNELS: argument validation and kernels under libFuzzer
  -- (tests/fuzz/fuzz_args.c): K/V in a block type laid out in whole blocks,
  -- paged K/V with a block table it builds (shuffled, evicted and bad
  -- entries), a RoPE table of exactly rope_rows rows
  fuzz = { pool = "test", features = "all" },
  -- Makefile NEON_CONFIGS: every test config with a NEON variant, under qemu
  neon = { pool = "test", every = true, filter = function(c) return has_isa(c, "neon") end },
  -- Makefile NEON_SCALAR: of those, the ones whose scalar variant runs under
  -- qemu too (every config's scalar variant runs natively in the kernel
  -- tests; on AArch64 a set that covers every feature is enough)
  neon_scalar = { pool = "test", features = "all", filter = function(c) return has_isa(c, "neon") end },
  -- Makefile kernel_list.h: the configs with bf16 products (their avx512bf16 variant's tests)
  matmul_bf16 = { pool = "any", every = true, filter = function(c) return c.matmul == "bf16" end },
  -- Makefile kernel_list.h: the configs with a backward pass (their backward tests)
  backward = { pool = "any", every = true, filter = function(c) return c.backward == true end },
}

--- Loads a config file in an empty environment; returns its table or nil, err.
function M.load(path)
  -- luacheck: read globals setfenv
  local chunk, err
  if setfenv then -- LuaJIT, Lua 5.1
    chunk, err = loadfile(path)
    if chunk then setfenv(chunk, {}) end
  else -- Lua 5.2+
    chunk, err = loadfile(path, "t", {})
  end
  if not chunk then return nil, err end
  local ok, cfg = pcall(chunk)
  if not ok then return nil, ("%s: %s"):format(path, tostring(cfg)) end
  if type(cfg) ~= "table" or type(cfg.name) ~= "string" then
    return nil, ("%s: not a config (a table with name, heads_q, head_dim)"):format(path)
  end
  local family = M.family(cfg)
  for _, k in ipairs(family.check.required) do
    if type(cfg[k]) ~= "number" then
      return nil, ("%s: not a config (kind '%s' needs name, %s)"):format(path, family.name,
        table.concat(family.check.required, ", "))
    end
  end
  return cfg
end

local function cost(c)
  local d = dims(c)
  return d.heads_q * (d.d + d.dv + d.da)
end

-- Whether candidate set a (a list of entries) beats b: fewer configs, more
-- (config, feature) pairs, cheaper, names first.
local function better(a, b)
  if b == nil then return true end
  if #a ~= #b then return #a < #b end
  local pa, pb, ca, cb = 0, 0, 0, 0
  for _, e in ipairs(a) do pa, ca = pa + #e.list, ca + e.cost end
  for _, e in ipairs(b) do pb, cb = pb + #e.list, cb + e.cost end
  if pa ~= pb then return pa > pb end
  if ca ~= cb then return ca < cb end
  local na, nb = {}, {}
  for i = 1, #a do na[i], nb[i] = a[i].name, b[i].name end
  table.sort(na)
  table.sort(nb)
  return table.concat(na, " ") < table.concat(nb, " ")
end

-- The best cover of the features `wanted` (a set) by entries: a depth-first
-- search that branches on the uncovered feature with the fewest entries
-- covering it and stops a branch once it cannot end smaller than the best.
local function best_cover(entries, wanted)
  local best
  local chosen = {}
  local function search(uncovered)
    local pick, options
    for f in pairs(uncovered) do
      local opts = {}
      for _, e in ipairs(entries) do
        if e.set[f] then opts[#opts + 1] = e end
      end
      if pick == nil or #opts < #options or (#opts == #options and f < pick) then
        pick, options = f, opts
      end
    end
    if pick == nil then
      local copy = {}
      for i, e in ipairs(chosen) do copy[i] = e end
      if better(copy, best) then best = copy end
      return
    end
    if best and #chosen >= #best then return end
    for _, e in ipairs(options) do
      local rest = {}
      for f in pairs(uncovered) do
        if not e.set[f] then rest[f] = true end
      end
      chosen[#chosen + 1] = e
      search(rest)
      chosen[#chosen] = nil
    end
  end
  search(wanted)
  return best or {}
end

--- The configs (entries {name, path, cfg, set, list, cost}) picked for a
-- purpose from files, sorted by name; or nil, err.
function M.select(purpose, files)
  local p = M.PURPOSES[purpose]
  if not p then
    local names = {}
    for k in pairs(M.PURPOSES) do names[#names + 1] = k end
    table.sort(names)
    return nil, ("unknown purpose '%s' (known: %s)"):format(tostring(purpose), table.concat(names, ", "))
  end
  local entries, seen = {}, {}
  for _, path in ipairs(files) do
    local is_test = path:match("^test/") or path:match("/test/[^/]*$")
    if p.pool == "any" or (p.pool == "test") == (is_test ~= nil) then
      local cfg, err = M.load(path)
      if not cfg then return nil, err end
      if seen[cfg.name] then
        return nil, ("%s: the name '%s' is also %s's"):format(path, cfg.name, seen[cfg.name])
      end
      seen[cfg.name] = path
      if not p.filter or p.filter(cfg) then
        local set, list = M.features(cfg)
        entries[#entries + 1] = { name = cfg.name, path = path, cfg = cfg, set = set, list = list,
          cost = cost(cfg) }
      end
    end
  end
  table.sort(entries, function(a, b) return a.name < b.name end)
  if p.every then return entries end

  local wanted = {}
  if p.features == "all" or type(p.features) == "function" then
    for _, e in ipairs(entries) do
      for f in pairs(e.set) do
        if p.features == "all" or p.features(f) then wanted[f] = true end
      end
    end
  else
    for _, f in ipairs(p.features) do
      for _, e in ipairs(entries) do
        if e.set[f] then wanted[f] = true end -- only features the pool has
      end
    end
  end
  local picked = best_cover(entries, wanted)
  table.sort(picked, function(a, b) return a.name < b.name end)
  return picked
end

local function main(args)
  local explain = false
  if args[1] == "--explain" then
    explain = true
    table.remove(args, 1)
  end
  local purpose = table.remove(args, 1)
  if not purpose then
    io.stderr:write("usage: lua tests/kernel_sets.lua [--explain] PURPOSE CONFIG.lua...\n")
    os.exit(2)
  end
  local picked, err = M.select(purpose, args)
  if not picked then
    io.stderr:write("kernel_sets: ", err, "\n")
    os.exit(2)
  end
  for _, e in ipairs(picked) do
    if explain then
      io.write(("%-22s %s\n"):format(e.name, table.concat(e.list, " ")))
    else
      io.write(e.name, "\n")
    end
  end
end

-- a script when run (lua tests/kernel_sets.lua ...), a module when required
if arg and arg[0] and arg[0]:match("kernel_sets%.lua$") then
  local args = {}
  for i = 1, #arg do args[i] = arg[i] end
  main(args)
end

return M
