--- Autotuning of tile sizes: which candidates to try, their sources, the
-- timing program's protocol and the choice of the fastest.
--
-- Two shape buckets are tuned separately: prefill (Lq = Lk = each --seq) picks
-- the tile {q, kv} of the flash kernel; decode (few query rows against a long
-- KV cache) picks the decode path's block of keys per pass.  Every candidate
-- is the config under another name (attn_<config>_q96k128_...) with only the
-- chosen ISA, so all of them link into one program
-- (runtime/tools/attn_tune_main.c) that times them on the same inputs in one
-- process.
local families = require("families")
local isa_registry = require("isa")
local planner = require("planner")
local render = require("render")
local util = require("util")

local M = {}

M.DEFAULT_SEQS = { 1024, 4096 }
M.DEFAULT_DECODE_SEQ = 4096

--- Racing in the default (pruned) mode: after the first prefill shape, the
-- best KEEP_MIN (or a quarter of the candidates, if more) within KEEP_WITHIN
-- of the best go on to the longer shapes.
M.KEEP_MIN = 3
M.KEEP_WITHIN = 0.10

--- Timing: each candidate's time on a shape is the best of at least
-- MIN_RUNS runs and MIN_TIME seconds, taken in rounds over the candidates
-- (runtime/tools/attn_tune_main.c); long shapes take two runs.
M.MIN_RUNS = 5
M.MIN_TIME = 0.25

--- The exhaustive grid's largest tile.q and tile.kv.
M.EXHAUSTIVE_Q = 288
M.EXHAUSTIVE_KV = 512

-- ---- the machine's caches ---------------------------------------------------

--- Data cache sizes in bytes, { l1 = ..., l2 = ..., l3 = ... }: from sysfs
-- where present, else the generic CPU profile's L1d and L2
-- (generator/cpu/generic.lua) and 32 MiB.
function M.caches()
  local generic = require("cpu").generic()
  local c = { l1 = generic.l1d_bytes, l2 = generic.l2_bytes, l3 = 33554432 }
  for i = 0, 7 do
    local base = ("/sys/devices/system/cpu/cpu0/cache/index%d/"):format(i)
    local level = tonumber((util.read_file(base .. "level") or ""):match("%d+"))
    local kind = (util.read_file(base .. "type") or ""):match("%a+")
    local num, unit = (util.read_file(base .. "size") or ""):match("(%d+)(%a?)")
    if level and num and kind ~= "Instruction" then
      local bytes = tonumber(num) * ((unit == "K" and 1024) or (unit == "M" and 1048576) or 1)
      if level == 1 then c.l1 = bytes elseif level == 2 then c.l2 = bytes elseif level == 3 then c.l3 = bytes end
    end
  end
  return c
end

-- ---- candidates -------------------------------------------------------------

local function gcd(a, b)
  while b ~= 0 do a, b = b, a % b end
  return a
end
local function lcm(a, b) return math.floor(a * b / gcd(a, b)) end

--- The steps of the tile grid for an ISA: tile.q in multiples of both
-- micro-kernels' row blocks, tile.kv in multiples of 16 (the widest vector)
-- and of the scores kernel's NR * lanes, so every tile runs full blocks.
function M.steps(isa_name)
  local isa = assert(isa_registry.get(isa_name))
  return lcm(isa.qk_block.mr, isa.pv_block.mr), lcm(16, isa.qk_block.nr * isa.lanes)
end

--- Bytes one step of the flash kernel touches with tile t: the query tile,
-- the scores, the output rows and the key tile of K and V.
function M.working_set(cfg, isa_name, t)
  local isa = assert(isa_registry.get(isa_name))
  local dvp = math.ceil(cfg.head_dim_v / isa.lanes) * isa.lanes
  return 4 * (t.q * (cfg.head_dim + t.kv + dvp) + t.kv * (cfg.head_dim + dvp))
end

local function multiples(step, lo, hi)
  local t = {}
  local first = math.max(step, math.ceil(lo / step) * step)
  for x = first, hi, step do t[#t + 1] = x end
  return t
end

local function same_tile(a, b) return a.q == b.q and a.kv == b.kv end

--- The candidates for cfg on an ISA.  By default a coarse grid pruned by
-- the register and cache budget: tile.q multiples of the q step between 48
-- and 192 (about four of them), tile.kv in 64, 128, 256, 512 (rounded to the
-- kv step), keeping tiles whose working set fits the L2 cache; decode blocks
-- of 8 to 128 keys.
-- opts.exhaustive: the full grid (tile.q every q step up to EXHAUSTIVE_Q,
-- tile.kv every kv step up to EXHAUSTIVE_KV, decode blocks 8 to 512), no
-- pruning.
-- opts.tiles / opts.blocks: exactly these prefill tiles / decode blocks
-- instead of a grid.
-- opts.caches overrides the cache sizes (tests).
-- The heuristic default is always a candidate (flag `heuristic`).  The
-- decode path's keys per split stay the planner's (512, doubled while a
-- sequence would have more than 32 splits): a split's setup and merge are
-- worth saving on long caches (3-4% at 32768 keys on one thread), and
-- longer splits on short caches would leave fewer units for more threads.
-- A family with a grid of its own (its family table's tune.grid: linear
-- attention's) has the grid's tiles, or the exhaustive grid's, unpruned.
-- Returns { prefill = { {q=, kv=}, ... }, decode = { {block=, chunk=}, ... } }.
function M.candidates(cfg, isa_name, opts)
  opts = opts or {}
  local qstep, kvstep = M.steps(isa_name)
  local caches = opts.caches or M.caches()
  local out = { prefill = {}, decode = {} }
  local grid = families.of(cfg).tune.grid
  local default = planner.default_tile(cfg)
  local heur = { q = default.q, kv = default.kv }
  local qs, kvs
  if opts.tiles then
    qs, kvs = {}, {}
  elseif grid and opts.exhaustive then
    local ex = grid.exhaustive
    qs, kvs = multiples(ex.q_step, ex.q_step, ex.q_max), ex.kvs
  elseif grid then
    qs, kvs = grid.qs, grid.kvs
  elseif opts.exhaustive then
    qs, kvs = multiples(qstep, qstep, M.EXHAUSTIVE_Q), multiples(kvstep, kvstep, M.EXHAUSTIVE_KV)
  else
    -- about four q values spread over [48, 192], on the q step
    qs = {}
    local seen = {}
    for _, want in ipairs({ 48, 96, 144, 192 }) do
      local q = math.max(qstep, math.floor(want / qstep + 0.5) * qstep)
      if not seen[q] then seen[q] = true; qs[#qs + 1] = q end
    end
    kvs = {}
    seen = {}
    for _, want in ipairs({ 64, 128, 256, 512 }) do
      local kv = math.max(kvstep, math.floor(want / kvstep + 0.5) * kvstep)
      if not seen[kv] then seen[kv] = true; kvs[#kvs + 1] = kv end
    end
  end
  for _, q in ipairs(qs) do
    for _, kv in ipairs(kvs) do
      local t = { q = q, kv = kv }
      if opts.exhaustive or grid or M.working_set(cfg, isa_name, t) <= caches.l2 then
        out.prefill[#out.prefill + 1] = t
      end
    end
  end
  for _, t in ipairs(opts.tiles or {}) do
    local dup = false
    for _, u in ipairs(out.prefill) do dup = dup or same_tile(t, u) end
    if not dup then out.prefill[#out.prefill + 1] = { q = t.q, kv = t.kv } end
  end
  local have = false
  for _, t in ipairs(out.prefill) do
    if same_tile(t, heur) then t.heuristic = true; have = true end
  end
  if not have then
    heur.heuristic = true
    out.prefill[#out.prefill + 1] = heur
  end
  table.sort(out.prefill, function(a, b) return a.q < b.q or (a.q == b.q and a.kv < b.kv) end)

  if (cfg.decode_max_q or 0) > 0 then
    -- the heuristic block is the planner's for this config (DECODE_BLOCK keys,
    -- fewer where a block of them would pass DECODE_BLOCK_BYTES), always a candidate
    local fp = planner.family(cfg.kind)
    local dblock = fp.default_decode_block(cfg)
    local blocks = opts.blocks or (opts.exhaustive and { 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512 })
      or { 8, 16, 32, 64, 128 }
    local seen, list = {}, { dblock }
    seen[dblock] = true
    for _, b in ipairs(blocks) do
      if not seen[b] then seen[b] = true; list[#list + 1] = b end
    end
    table.sort(list)
    for _, block in ipairs(list) do
      if block <= fp.DECODE_CHUNK then
        out.decode[#out.decode + 1] = { block = block, chunk = fp.DECODE_CHUNK, heuristic = block == dblock or nil }
      end
    end
  end
  return out
end

--- A candidate's label ("q96 kv128", "block 64 chunk 512") and name suffix.
function M.label(bucket, t)
  if bucket == "prefill" then return ("q%d kv%d"):format(t.q, t.kv) end
  return ("block %d chunk %d"):format(t.block, t.chunk)
end

local function suffix(bucket, t)
  if bucket == "prefill" then return ("_q%dk%d"):format(t.q, t.kv) end
  return ("_b%dc%d"):format(t.block, t.chunk)
end

-- ---- sources ------------------------------------------------------------------

--- The config of one candidate: renamed, one ISA, its tile; prefill
-- candidates leave out the decode path (never taken at their shapes, and
-- compiling it costs time), decode candidates keep the heuristic tile.
local function candidate_config(cfg, isa_name, bucket, t)
  local c = {}
  for k, v in pairs(cfg) do c[k] = v end
  c.name = cfg.name .. suffix(bucket, t)
  c.isa = { isa_name }
  if bucket == "prefill" then
    c.tile = { q = t.q, kv = t.kv }
    if c.decode_max_q then c.decode_max_q = 0 end -- a family without a decode path has no such key
  else
    local h = planner.default_tile(cfg)
    c.tile = { q = h.q, kv = h.kv }
  end
  return c
end

--- The query rows at which decode candidates are timed on isa_name: the
-- fewest that take the blocked decode kernel, whose keys per block are what
-- the candidates differ in.  The streaming kernel (up to stream.max_q rows)
-- reads a split that every row sees in full without blocks, so timing it
-- would pick by noise.  Returns the rows and, when they are not 1, a note
-- saying why; 1 when the streaming kernel takes every decode shape (then
-- the block matters only on masked splits).
function M.decode_rows(cfg, isa_name)
  local fp = planner.family(cfg.kind)
  local c = candidate_config(cfg, isa_name, "decode",
    { block = fp.default_decode_block(cfg), chunk = fp.DECODE_CHUNK })
  local st = planner.plan(c, {}).variants[1].stream
  if st and st.max_q < cfg.decode_max_q then
    return st.max_q + 1, ("decode candidates are timed at Lq = %d: the streaming kernel takes Lq <= %d"
      .. " and reads fully visible keys without blocks"):format(st.max_q + 1, st.max_q)
  end
  return 1
end

--- The generated files of every candidate and the table the timing program
-- reads.  cands: as M.candidates returns (buckets may be empty).  Returns
-- files ({name, text}, .h and .c of each candidate, then attn_tune_table.c)
-- and the list of candidates in table order ({bucket, tile, label,
-- heuristic}).
function M.sources(cfg, isa_name, cands)
  local files, list = {}, {}
  local rows, includes = {}, {}
  for _, bucket in ipairs({ "prefill", "decode" }) do
    for _, t in ipairs(cands[bucket] or {}) do
      local c = candidate_config(cfg, isa_name, bucket, t)
      local popts = { tile = c.tile, tile_reason = "tuning candidate" }
      if bucket == "decode" then
        popts.decode_block, popts.decode_chunk, popts.decode_reason = t.block, t.chunk, "tuning candidate"
      end
      local plan = planner.plan(c, popts)
      for _, f in ipairs(render.kernel_files(plan, "attngen tune " .. cfg.name)) do files[#files + 1] = f end
      local label = M.label(bucket, t)
      list[#list + 1] = { bucket = bucket, tile = t, label = label, heuristic = t.heuristic or false }
      includes[#includes + 1] = ('#include "%s.h"'):format(c.name)
      rows[#rows + 1] = ('    { &%s, "%s", "%s", %d },'):format(plan.kernel, bucket, label, t.heuristic and 1 or 0)
    end
  end
  local text = table.concat({
    "/* The candidates of `attngen tune " .. cfg.name .. "`, for runtime/tools/attn_tune_main.c. */",
    table.concat(includes, "\n"),
    "",
    "typedef struct attn_tune_candidate {",
    "    const attn_kernel *kernel;",
    "    const char *bucket;",
    "    const char *label;",
    "    int always;",
    "} attn_tune_candidate;",
    "",
    "const attn_tune_candidate attn_tune_candidates[] = {",
    table.concat(rows, "\n"),
    "};",
    ("const int attn_tune_count = %d;"):format(#list),
    "",
  }, "\n")
  files[#files + 1] = { name = "attn_tune_table.c", text = text }
  return files, list
end

-- ---- running the timing program -------------------------------------------------

--- The timing program's arguments: options, then shapes in order (prefill
-- shortest first, so racing prunes on the cheapest shape).
-- o: { isa, threads, seqs, decode_seq, decode_q (default 1), prefill = bool, decode = bool, exhaustive, count }
function M.driver_args(o)
  local argv = { "--isa", o.isa, "--threads", tostring(o.threads), "--min-runs", tostring(M.MIN_RUNS),
    "--min-time", tostring(M.MIN_TIME) }
  if not o.exhaustive then
    local keep = math.max(M.KEEP_MIN, math.ceil((o.count or 0) / 4))
    argv[#argv + 1] = "--keep"
    argv[#argv + 1] = tostring(keep)
    argv[#argv + 1] = "--keep-within"
    argv[#argv + 1] = tostring(M.KEEP_WITHIN)
  end
  if o.prefill then
    local seqs = {}
    for i, s in ipairs(o.seqs) do seqs[i] = s end
    table.sort(seqs)
    for _, s in ipairs(seqs) do argv[#argv + 1] = ("prefill:%d:%d"):format(s, s) end
  end
  if o.decode then
    -- decode runs are timed with cold caches: twice the last-level cache written before each
    argv[#argv + 1] = "--flush-decode"
    argv[#argv + 1] = ("%d"):format(2 * M.caches().l3)
    argv[#argv + 1] = ("decode:%d:%d"):format(o.decode_q or 1, o.decode_seq)
  end
  return argv
end

--- Runs the timing program; on_event(ev) gets each JSON line as a table.
-- Returns true, or nil and the program's error text.
function M.run_driver(exe, argv, on_event)
  local json = require("dkjson")
  local parts = { util.shell_quote(exe) }
  for _, a in ipairs(argv) do parts[#parts + 1] = util.shell_quote(a) end
  io.stdout:flush()
  local p = io.popen("(" .. table.concat(parts, " ") .. ") 2>&1; echo \"@rc=$?\"")
  local other, rc = {}, nil
  for line in p:lines() do
    local code = line:match("^@rc=(%d+)$")
    if code then
      rc = tonumber(code)
    elseif line:sub(1, 1) == "{" then
      local ev = json.decode(line)
      if type(ev) == "table" then on_event(ev) else other[#other + 1] = line end
    elseif line ~= "" then
      other[#other + 1] = line
    end
  end
  p:close()
  if rc ~= 0 then
    local msg = table.concat(other, "; "):gsub("^attngen: ", "")
    if msg == "" then msg = ("the timing program exited with status %s"):format(tostring(rc)) end
    return nil, msg
  end
  return true
end

-- ---- choosing -------------------------------------------------------------------

--- The bucket's score of each candidate: the geometric mean of its GFLOP/s
-- over the bucket's shapes, for candidates timed on all of them.
-- results[i] = { [shape key] = gflops }; shapes: list of shape keys.
-- Returns the index of the best candidate of `bucket` (or nil) and scores.
function M.choose(list, results, bucket, shapes)
  local best, scores = nil, {}
  for i, c in ipairs(list) do
    if c.bucket == bucket and #shapes > 0 then
      local logsum, n = 0, 0
      for _, s in ipairs(shapes) do
        local g = results[i] and results[i][s]
        if g and g > 0 then
          logsum = logsum + math.log(g)
          n = n + 1
        end
      end
      if n == #shapes then
        scores[i] = math.exp(logsum / n)
        if not best or scores[i] > scores[best] then best = i end
      end
    end
  end
  return best, scores
end

return M
