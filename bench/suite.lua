--- The benchmark suite behind `make bench`.
--
-- Runs `attngen bench --json` on the shapes the performance targets name,
-- in one run (ratios, not absolute times, are what this shared machine can
-- vouch for), prints one table per target with the ratio and whether it
-- holds, writes the raw results to bench/results.json and a plot of GFLOP/s
-- against sequence length per implementation, with the measured FMA peak
-- as a line, to bench/prefill.svg.  Decode shapes report K/V bytes read per
-- second against the read bandwidth the bench measures, and a sweep over
-- the query rows shows where the decode path stops paying.
--
-- The plot is drawn by gnuplot (generator/plots.lua); --replot redraws it
-- from DIR/results.json without running anything.
--
-- Usage: luajit bench/suite.lua [--quick] [--out DIR] [--only S,S,...] [--replot]
--
-- --only runs the named sections alone (their names: SECTIONS below), for a
-- machine with little time or a target to re-measure; the tables of the
-- sections not run are left out.
local root = os.getenv("ATTNGEN_ROOT") or "."
package.path = root .. "/generator/?.lua;" .. root .. "/generator/?/init.lua;" .. package.path

local json = require("dkjson")
local util = require("util")
local gnuplot = require("gnuplot")
local plots = require("plots")

--- The suite's sections, in the order they run.
local SECTIONS = { "prefill", "causal", "weights", "dropout", "backward", "window", "sparse", "threads", "odd", "avx2",
  "compile", "storage", "bf16", "mla", "linear", "classic", "decode", "threshold", "chunked", "paged", "short",
  "multi", "options", "serving", "sweep" }

local USAGE = "usage: bench/suite.lua [--quick] [--out DIR] [--only SECTION,...] [--replot]\n"
local quick, out, replot, only = false, nil, false, nil
do
  local i = 1
  while arg[i] do
    if arg[i] == "--quick" then quick = true
    elseif arg[i] == "--out" and arg[i + 1] then out = arg[i + 1]; i = i + 1
    elseif arg[i] == "--only" and arg[i + 1] then
      only = {}
      local known = {}
      for _, name in ipairs(SECTIONS) do known[name] = true end
      for name in arg[i + 1]:gmatch("[^,]+") do
        if not known[name] then
          io.stderr:write(("attngen: bench suite: unknown section %q (sections: %s)\n"):format(name,
            table.concat(SECTIONS, ",")))
          os.exit(2)
        end
        only[name] = true
      end
      i = i + 1
    elseif arg[i] == "--replot" then replot = true
    else io.stderr:write(USAGE); os.exit(2) end
    i = i + 1
  end
end
-- a run of some sections keeps its results apart from the full suite's
out = out or (only and root .. "/bench/sections" or root .. "/bench")
--- Whether the suite runs the section of that name.
local function wanted(section) return not only or only[section] == true end

--- The variant the suite times: the widest vector ISA this CPU runs (set
-- below, or read back from results.json by --replot), and its name in prose.
local ISA
local ISA_NAMES = { avx512 = "AVX-512", avx2 = "AVX2", neon = "NEON", scalar = "scalar C" }
local function isa_name() return ISA_NAMES[ISA] or ISA end

--- Writes DIR/prefill.svg: GFLOP/s against L per implementation (series:
-- name -> {{L, GFLOP/s}, ...}), the FMA peak as a line.
local function write_plot(series, peak)
  local names = {}
  for n in pairs(series) do names[#names + 1] = n end
  table.sort(names)
  local lines = {}
  for _, n in ipairs(names) do lines[#lines + 1] = { name = n, points = series[n] } end
  local ok, err = gnuplot.render(out .. "/prefill.svg", plots.lines({
    title = "attngen prefill, fp32, H=8, D=128, non-causal, 1 thread",
    xlabel = "sequence length (Lq = Lk)", ylabel = "GFLOP/s", logx = true,
    series = lines, hline = { value = peak, label = ("%s FMA peak (%.0f)"):format(isa_name(), peak) },
  }))
  if not ok then io.stderr:write("attngen: ", err, "\n"); os.exit(1) end
end

--- The sweep's series and peak from the runs recorded in results.json.
local function sweep_of(runs)
  local series, peak = {}, 0
  for _, r in ipairs(runs) do
    local l = tonumber(r.name:match("^sweep L=(%d+)$"))
    if l then
      for _, x in ipairs(r.data.results) do
        series[x.impl] = series[x.impl] or {}
        table.insert(series[x.impl], { l, x.gflops })
        if x.impl == ISA then peak = math.max(peak, x.peak_gflops) end
      end
    end
  end
  return series, peak
end

if replot then
  local text = util.read_file(out .. "/results.json")
  local data = text and json.decode(text)
  if not data or not data.runs then
    io.stderr:write("attngen: ", out, "/results.json: no results to plot\n")
    os.exit(2)
  end
  ISA = data.isa or "avx512" -- results written before the suite named its ISA were AVX-512's
  write_plot(sweep_of(data.runs))
  print(("wrote %s/prefill.svg"):format(out))
  os.exit(0)
end

local L = quick and 1024 or 4096           -- the prefill length of the targets
local LW = quick and 2048 or 8192          -- sliding-window length
local LODD = quick and 512 or 2048         -- odd head dims

local tty = os.execute("test -t 1") == true or os.execute("test -t 1") == 0
local function progress(msg)
  if tty then io.write("\r\27[K", msg) else io.write(msg, "\n") end
  io.flush()
end

--- One `attngen bench` run; returns the decoded JSON.  A failed run ends
-- the suite, unless soft: then it returns nil and the run's first line.
local function bench(preset, sets, opts, soft)
  local cmd = { util.shell_quote(root .. "/bin/attngen"), "bench", preset, "--json" }
  for _, s in ipairs(sets) do cmd[#cmd + 1] = "--set " .. util.shell_quote(s) end
  for _, k in ipairs(util.sorted_keys(opts)) do
    local v = opts[k]
    cmd[#cmd + 1] = v == true and ("--" .. k) or ("--%s %s"):format(k, util.shell_quote(tostring(v)))
  end
  local ok, text = util.run_capture(table.concat(cmd, " "))
  local line = text:match("({.*})%s*$")
  if not ok or not line then
    if soft then return nil, (text:match("[^\n]+") or "no output") end
    io.stderr:write("\nattngen: bench failed: ", table.concat(cmd, " "), "\n", text, "\n")
    os.exit(1)
  end
  return json.decode(line)
end

local function result(r, impl)
  for _, x in ipairs(r.results) do if x.impl == impl then return x end end
  return nil
end

-- the widest vector ISA this CPU runs, from a tiny bench run (its variants
-- are those the dispatcher can pick here: llama3_8b's f32 ISAs, in the
-- registry's best-first order); every target is measured on it
do
  local probe = bench("llama3_8b", {}, { ["seq-q"] = 4, ["seq-k"] = 4, ["no-reference"] = true, ["no-blas"] = true })
  for _, name in ipairs(require("isa").order) do
    if not ISA and result(probe, name) then ISA = name end
  end
  if not ISA then io.stderr:write("attngen: bench: no variant of llama3_8b runs on this CPU\n"); os.exit(1) end
  if ISA ~= "avx512" then
    io.write(("attngen bench suite: this CPU's widest variant is %s, not AVX-512: the targets, set on"
      .. " AVX-512, are measured on %s\n"):format(isa_name(), isa_name()))
  end
end

local runs, rows = {}, {}
--- Each run is also appended to DIR/results.partial.jsonl as it is
-- measured, so that a suite stopped part-way (a time limit, a slow machine)
-- keeps what it timed; the file is removed once results.json is written.
local partial_path = out .. "/results.partial.jsonl"
local partial
local function record(name, r)
  runs[#runs + 1] = { name = name, data = r }
  if not partial then
    util.makepath(out)
    partial = io.open(partial_path, "w")
    if not partial then io.stderr:write("attngen: cannot write ", partial_path, "\n"); os.exit(1) end
  end
  partial:write(json.encode({ name = name, data = r }), "\n")
  partial:flush()
end
--- A target row: what, measured, the goal, and whether it holds.  A value
-- that rounds to the goal's own figure gets the digits that tell them apart,
-- so that a miss by less than the rounding does not read "0.80 >= 0.80 NO".
local function target(what, value, goal, holds, fmt, at)
  local shown = (fmt or "%.2f"):format(value)
  local g, digits = tonumber(goal:match("[%d.]+$")), 3
  while not fmt and tonumber(shown) == g and value ~= g and digits <= 6 do
    shown = ("%." .. digits .. "f"):format(value)
    digits = digits + 1
  end
  rows[at or #rows + 1] = { what = what, value = shown, goal = goal, ok = holds }
end
--- A row with no goal: a figure shown next to the targets, not judged.
local function info(what, value, fmt, at)
  rows[at or #rows + 1] = { what = what, value = (fmt or "%.2f"):format(value), goal = "-", info = true }
end
--- A target that could not be measured: not held, with a note under the table.
local notes = {}
local function unmeasured(what, goal, note)
  rows[#rows + 1] = { what = what, value = "-", goal = goal, ok = false, note = note }
  notes[#notes + 1] = ("%s: %s"):format(what:match("^[^:]*"), note)
end
--- A place in the target table for a row measured later (`target(..., at)`).
local function reserve()
  rows[#rows + 1] = false
  return #rows
end

local H8 = { "heads_q=8", "heads_kv=8", "causal=false" }
local function with(base, ...)
  local t = {}
  for _, s in ipairs(base) do t[#t + 1] = s end
  for _, s in ipairs({ ... }) do t[#t + 1] = s end
  return t
end

--- Section 1's run at D = 128 (non-causal, f32, 1 thread): the reference
-- point of sections 2, 4 and 7b, run by the first of them the suite runs.
local full
local function full_run()
  if not full then
    progress(("prefill D=128 L=%d, 1 thread"):format(L))
    full = bench("llama3_8b", with(H8, "head_dim=128"), { ["seq-q"] = L, threads = 1, isa = ISA })
    record("prefill D=128", full)
  end
  return full
end

-- 1. D = 128 and D = 64, non-causal, 1 thread, against OpenBLAS and the peak
for _, d in ipairs(wanted("prefill") and { 128, 64 } or {}) do
  local r = d == 128 and full_run()
  if not r then
    progress(("prefill D=%d L=%d, 1 thread"):format(d, L))
    r = bench("llama3_8b", with(H8, "head_dim=" .. d), { ["seq-q"] = L, threads = 1, isa = ISA })
    record(("prefill D=%d"):format(d), r)
  end
  local k = result(r, ISA)
  local frac = k.gflops / k.peak_gflops
  target(("D=%d L=%d non-causal, 1 thread: fraction of FMA peak"):format(d, L), frac,
    d == 128 and ">= 0.80" or ">= 0.70", frac >= (d == 128 and 0.80 or 0.70))
  local b = result(r, "openblas")
  if b and d == 128 then
    target(("D=128 L=%d: speed-up over OpenBLAS (%s)"):format(L, r.blas_core), k.gflops / b.gflops,
      ">= 1.25", k.gflops / b.gflops >= 1.25)
  end
end

-- 2. causal against non-causal at the same shape
if wanted("causal") then
  local f = full_run()
  progress(("causal L=%d"):format(L))
  local causal = bench("llama3_8b", with(H8, "causal=true"), { ["seq-q"] = L, threads = 1, isa = ISA })
  record("prefill causal", causal)
  local speed = result(f, ISA).seconds / result(causal, ISA).seconds
  target(("causal vs non-causal at L=%d: speed-up"):format(L), speed, ">= 1.8", speed >= 1.8)
end

-- 2b. the attention weights output (weights = true: P written as well as O)
-- against the same causal kernel without it, 1 thread
local LP = quick and 1024 or 2048
local nowt -- the causal run at LP without weights, which 2c reuses when LD = LP
if wanted("weights") then
  progress(("causal L=%d with weights"):format(LP))
  nowt = bench("llama3_8b", with(H8, "causal=true"), { ["seq-q"] = LP, threads = 1, isa = ISA,
    ["no-reference"] = true })
  local wt = bench("llama3_8b", with(H8, "causal=true", "weights=true"), { ["seq-q"] = LP, threads = 1, isa = ISA,
    ["no-reference"] = true })
  record("prefill causal, no weights", nowt)
  record("prefill causal, weights", wt)
  local wcost = result(wt, ISA).seconds / result(nowt, ISA).seconds
  target(("weights = true, causal L=%d: time / the time without weights"):format(LP), wcost, "<= 1.6", wcost <= 1.6)
end

-- 2c. dropout on the weights (dropout = true; the bench passes dropout_p = 0.1) against the same
-- causal kernel without it, 1 thread
local LD = quick and 1024 or 4096
if wanted("dropout") then
  progress(("causal L=%d with dropout"):format(LD))
  local nodr = LD == LP and nowt or bench("llama3_8b", with(H8, "causal=true"), { ["seq-q"] = LD, threads = 1,
    isa = ISA, ["no-reference"] = true })
  local dr = bench("llama3_8b", with(H8, "causal=true", "dropout=true"), { ["seq-q"] = LD, threads = 1, isa = ISA,
    ["no-reference"] = true })
  record("prefill causal, no dropout", nodr)
  record("prefill causal, dropout 0.1", dr)
  local dcost = result(dr, ISA).seconds / result(nodr, ISA).seconds
  target(("dropout = true with dropout_p = 0.1, causal L=%d: time / the time without dropout"):format(LD), dcost,
    "<= 1.15", dcost <= 1.15)
end

-- 2d. the backward pass (backward = true): GFLOP/s counting 2.5 times the forward's FLOPs,
-- against the FMA peak the same run measures; the bench prints its backward rows (the variant's
-- and the unfused OpenBLAS backward's) as lines of their own after the forward's JSON.  GPT-2's
-- config at Llama-3-8B's head shape, without RoPE and GQA (8 heads of their own).
local LB = quick and 1024 or 4096
if wanted("backward") then
  --- The forward's result, the variant's backward line and OpenBLAS's (nil without it).
  local function backward_run(sets, l, threads, blas)
    local cmd = { util.shell_quote(root .. "/bin/attngen"), "bench", "gpt2", "--json", "--set backward=true",
      "--seq-q", tostring(l), "--threads", tostring(threads), "--isa", ISA, "--no-reference" }
    if not blas then cmd[#cmd + 1] = "--no-blas" end
    for _, x in ipairs(sets) do cmd[#cmd + 1] = "--set " .. util.shell_quote(x) end
    local ok, text = util.run_capture(table.concat(cmd, " "))
    local fwd, bwd, base
    for line in (ok and text or ""):gmatch("[^\n]+") do
      local r = line:match("^{") and json.decode(line)
      if type(r) == "table" and r.direction == "backward" then
        if r.impl == ISA then bwd = r elseif r.impl == "openblas" then base = r end
      elseif type(r) == "table" and r.results then
        fwd = result(r, ISA)
      end
    end
    if not (fwd and bwd) then
      io.stderr:write("\nattngen: bench failed: ", table.concat(cmd, " "), "\n", text, "\n")
      os.exit(1)
    end
    return fwd, bwd, base
  end
  local B8 = { "heads_q=8", "head_dim=128", "causal=false" }
  local one = {}
  for _, c in ipairs({ { key = "causal", what = ("H 8, D 128, L=%d, causal"):format(LB), sets = with(B8, "causal=true"),
    l = LB, goal = 0.60 }, { key = "full", what = ("H 8, D 128, L=%d, non-causal"):format(LB), sets = B8, l = LB,
    goal = 0.65, blas = true }, { what = "H 8, D 64, L=1024, causal",
    sets = { "heads_q=8", "head_dim=64", "causal=true" }, l = 1024, goal = 0.50 } }) do
    progress("backward " .. c.what)
    local fwd, r, base = backward_run(c.sets, c.l, 1, c.blas)
    record("backward " .. c.what, { forward = fwd, backward = r, openblas = base })
    if c.key then one[c.key] = { fwd = fwd, bwd = r } end
    target(("backward pass, %s: GFLOP/s / FMA peak"):format(c.what), r.gflops / r.peak_gflops,
      (">= %.2f"):format(c.goal), r.gflops / r.peak_gflops >= c.goal)
    if base then
      -- 1.25, the forward's goal against OpenBLAS: the unfused backward's five
      -- sgemms run near the FMA peak (0.9), so against a fused kernel at 0.65
      -- of it they take 0.72 of its time, and the speed-up is that plus the
      -- unfused passes over the Lq x Lk matrices (5x would need those passes
      -- to take six times the sgemms' time)
      local x = base.seconds / r.seconds
      target(("backward pass, %s: speed-up over the unfused OpenBLAS backward (%s)"):format(c.what,
        base.blas_core), x, ">= 1.25", x >= 1.25)
    end
  end
  -- two threads against one, the causal shape
  progress(("backward L=%d causal, 2 threads"):format(LB))
  local _, two = backward_run(with(B8, "causal=true"), LB, 2)
  record(("backward H 8, D 128, L=%d, causal, 2 threads"):format(LB), { backward = two })
  local sp = one.causal.bwd.seconds / two.seconds
  target(("backward pass, H 8, D 128, L=%d, causal: 2 threads / 1 thread speed-up"):format(LB), sp, ">= 1.8",
    sp >= 1.8)
  -- forward + backward with dropout (dropout_p = 0.1, the bench's) against without
  progress(("backward L=%d causal with dropout"):format(LB))
  local dfwd, dbwd = backward_run(with(B8, "causal=true", "dropout=true"), LB, 1)
  record(("backward H 8, D 128, L=%d, causal, dropout 0.1"):format(LB), { forward = dfwd, backward = dbwd })
  local dr = (dfwd.seconds + dbwd.seconds) / (one.causal.fwd.seconds + one.causal.bwd.seconds)
  target(("forward + backward, H 8, D 128, L=%d, causal, dropout_p = 0.1: time / the time without"):format(LB), dr,
    "<= 1.15", dr <= 1.15)
end

-- 3. sliding window W = 512 at LW against the window's share of non-causal time
if wanted("window") then
  progress(("sliding window 512 at L=%d"):format(LW))
  local wfull = bench("llama3_8b", H8, { ["seq-q"] = LW, threads = 1, isa = ISA, ["no-reference"] = true })
  local win = bench("llama3_8b", with(H8, "window={left=511,right=0}"),
    { ["seq-q"] = LW, threads = 1, isa = ISA, ["no-reference"] = true })
  record("window full", wfull)
  record("window 512", win)
  local share = (512 / LW) * result(wfull, ISA).seconds
  local wr = result(win, ISA).seconds / share
  target(("window 512 at L=%d: time / ((W/L) x non-causal time)"):format(LW), wr, "<= 1.3", wr <= 1.3)
end

-- 3b. chunked attention and the Sparse Transformer patterns at LW against
-- the causal kernel's time scaled by the scores each computes (visible
-- scores / the causal kernel's, as the bench counts them)
if wanted("sparse") then
  progress(("chunked and sparse masks at L=%d"):format(LW))
  local scausal = bench("llama3_8b", with(H8, "causal=true"),
    { ["seq-q"] = LW, threads = 1, isa = ISA, ["no-reference"] = true })
  record("causal (chunk and sparse reference)", scausal)
  for _, sp in ipairs({ { "chunk 2048", "chunk=2048", 1.3 },
      { "sparse fixed 128/16", 'sparse={pattern="fixed",block=128,summary=16}', 1.5 },
      { "sparse strided 128", 'sparse={pattern="strided",stride=128}', 2 } }) do
    local r = bench("llama3_8b", with(H8, "causal=true", sp[2]),
      { ["seq-q"] = LW, threads = 1, isa = ISA, ["no-reference"] = true })
    record(sp[1], r)
    local sshare = r.visible_scores / scausal.visible_scores * result(scausal, ISA).seconds
    local sr = result(r, ISA).seconds / sshare
    target(("%s at L=%d: time / ((visible/causal) x causal time)"):format(sp[1], LW), sr,
      ("<= %g"):format(sp[3]), sr <= sp[3])
  end
end

-- 4. two threads
if wanted("threads") then
  local f = full_run()
  progress(("2 threads L=%d"):format(L))
  local two = bench("llama3_8b", H8, { ["seq-q"] = L, threads = 2, isa = ISA, ["no-reference"] = true })
  record("prefill 2 threads", two)
  local scale = result(two, ISA).gflops / result(f, ISA).gflops
  target(("2 threads vs 1 at L=%d"):format(L), scale, ">= 1.85", scale >= 1.85)
end

-- 5. odd head dims
for _, d in ipairs(wanted("odd") and { 59, 72, 111 } or {}) do
  progress(("head dim %d at L=%d"):format(d, LODD))
  local r = bench("llama3_8b", with(H8, "head_dim=" .. d), { ["seq-q"] = LODD, threads = 1, isa = ISA })
  record(("odd D=%d"):format(d), r)
  local k = result(r, ISA)
  target(("D=%d L=%d: fraction of FMA peak"):format(d, LODD), k.gflops / k.peak_gflops, ">= 0.60",
    k.gflops / k.peak_gflops >= 0.60)
end

-- 6. the AVX2 variant
if wanted("avx2") then
  progress(("AVX2 L=%d"):format(L))
  local what = ("AVX2 variant, D=128 L=%d: fraction of the AVX2 peak"):format(L)
  local avx2, err = bench("llama3_8b", H8, { ["seq-q"] = L, threads = 1, isa = "avx2", ["no-reference"] = true }, true)
  if avx2 then
    record("prefill avx2", avx2)
    local a2 = result(avx2, "avx2")
    target(what, a2.gflops / a2.peak_gflops, ">= 0.70", a2.gflops / a2.peak_gflops >= 0.70)
  else
    unmeasured(what, ">= 0.70", "no avx2 row: " .. err)
  end
end

-- 7. generating and compiling one preset, f32 and all-bf16, in a build cache
-- of its own whose runtime entry is built (once per compiler and flags: the
-- runtime's objects, the tools' mains, the precompiled headers) but no
-- kernel.  The target (the best of three rounds): generate, then the build
-- parts of the x86 variants and the dispatch at once, as the build cache
-- compiles them (the variants' parts with the entry's precompiled intrinsics
-- header).  Not judged: what
-- `attngen run` of a new config does in all (every part, the entry unit, the
-- three tools' links, a one-row run), and the file whole in one plain `cc -c`,
-- as a vendored file compiles.
--- The build parts of a generated file's x86 variants: the numbers its
-- x86 intrinsics include's guard names (lib/includes).
local function x86_parts(text)
  local parts = {}
  for line in text:gmatch("[^\n]+") do
    if line:find("^#if %(defined%(__x86_64__%)") then
      for k in line:gmatch("ATTN_BUILD_PART == (%d+)") do parts[#parts + 1] = tonumber(k) end
      break
    end
  end
  return parts
end
for _, preset in ipairs(wanted("compile") and { "llama3_8b", "mistral_7b_bf16" } or {}) do
  progress("generate + compile " .. preset)
  local q = util.shell_quote
  local cache = os.tmpname()
  os.remove(cache)
  local function wall(cmd) -- wall time, taken by the shell around the commands
    local ok, text = util.run_capture("s=$(date +%s%N); " .. cmd .. " && echo \"@ns=$(( $(date +%s%N) - s ))\"")
    local ns = tonumber((text or ""):match("@ns=(%d+)"))
    if not ok or not ns then io.stderr:write("\ngenerate + compile failed:\n", text or "", "\n"); os.exit(1) end
    return ns * 1e-9
  end
  local run = ("ATTNGEN_CACHE=%s %s/bin/attngen run %s --random-inputs 1 --seq-q 1 --seq-k 16 -o %s/o.npy >/dev/null")
    :format(q(cache), q(root), preset, q(cache))
  wall(run) -- the runtime entry (and this preset's, removed next)
  local all = wall(("rm -rf %s/%s-* && %s"):format(q(cache), preset, run))
  local gen = ("mkdir -p %s/x && ATTNGEN_TUNE_DB=none %s/bin/attngen generate -q %s -o %s/x"):format(q(cache), q(root),
    preset, q(cache))
  os.execute(gen)
  local text = util.read_file(("%s/x/%s.c"):format(cache, preset)) or ""
  local has_pch, ls = util.run_capture(("ls %s/runtime-*/pch-immintrin.h 2>/dev/null"):format(q(cache)))
  local pch = has_pch and ls:match("[^\n]+") -- gcc finds its .gch beside it; clang reads the header
  local jobs, parts = {}, x86_parts(text)
  table.insert(parts, 1, 0) -- the dispatch
  for _, k in ipairs(parts) do
    local include = (k > 0 and pch) and (" -include " .. q(pch)) or ""
    jobs[#jobs + 1] = ("cc -std=c99 -O2 -D_POSIX_C_SOURCE=200809L -fopenmp%s -I%s/x -I%s/runtime -DATTN_BUILD_PART=%d"
      .. " -c %s/x/%s.c -o %s/x/k%d.o & pids=\"$pids $!\";"):format(include, q(cache), q(root), k, q(cache), preset,
      q(cache), k)
  end
  local x86_cmd = ("rm -rf %s/x && %s && (pids=; %s for p in $pids; do wait $p || exit 1; done)"):format(q(cache), gen,
    table.concat(jobs, " "))
  local x86 = math.huge -- the best of three rounds
  for _ = 1, 3 do x86 = math.min(x86, wall(x86_cmd)) end
  local whole = wall(("mkdir -p %s/w && %s/bin/attngen generate -q %s -o %s/w && cc -std=c99 -O2 -fopenmp -I%s/runtime"
    .. " -c %s/w/%s.c -o %s/w/k.o"):format(q(cache), q(root), preset, q(cache), q(root), q(cache), preset, q(cache)))
  os.execute("rm -rf " .. q(cache))
  target(("generate + compile %s, its x86 variants (seconds)"):format(preset), x86, "< 2.5", x86 < 2.5)
  info(("generate + compile + run %s through the build cache (seconds)"):format(preset), all)
  info(("generate + compile %s whole, one cc (seconds)"):format(preset), whole)
end

-- 7b. reduced storage types (matmul = "f32"): prefill against the f32
-- kernel of the same run (section 1), 1 thread
for _, dt in ipairs(wanted("storage") and { "bf16", "f16" } or {}) do
  local f = full_run()
  progress(("prefill %s storage L=%d, 1 thread"):format(dt, L))
  local r = bench("llama3_8b", with(H8, ("dtype=%q"):format(dt)),
    { ["seq-q"] = L, threads = 1, isa = ISA, ["no-reference"] = true })
  record(("prefill %s"):format(dt), r)
  local ratio = result(r, ISA).gflops / result(f, ISA).gflops
  target(("%s storage, D=128 L=%d: GFLOP/s / the f32 kernel's"):format(dt, L), ratio, ">= 0.95", ratio >= 0.95)
end

-- 7c. bf16 products (all-bf16, matmul = "bf16": the avx512bf16 variant,
-- vdpbf16ps for Q.K^T and P.V), 1 thread, against the f32 kernel timed
-- right before it (the bf16 run's own avx512 row is bf16 storage with f32
-- products, not the f32 kernel); and its fraction of the bf16 dot peak the
-- bench measures.  Without the variant (a CPU without AVX512_BF16, or a
-- generator that does not make it) the target is not held, with a note.
if wanted("bf16") then
  progress(("prefill all-bf16, matmul bf16, L=%d, 1 thread"):format(L))
  local what = ('matmul="bf16" (all-bf16), D=128 L=%d: GFLOP/s / f32, run just before'):format(L)
  local f32 = bench("llama3_8b", H8, { ["seq-q"] = L, threads = 1, isa = ISA, ["no-reference"] = true,
    ["no-blas"] = true })
  record("prefill f32 before matmul bf16", f32)
  local r, err = bench("llama3_8b", with(H8, 'dtype="bf16"', 'matmul="bf16"'),
    { ["seq-q"] = L, threads = 1, isa = "avx512bf16", ["no-reference"] = true }, true)
  local k = r and result(r, "avx512bf16")
  if k then
    record("prefill matmul bf16", r)
    local ratio = k.gflops / result(f32, ISA).gflops
    target(what, ratio, ">= 1.5", ratio >= 1.5)
    if k.bf16_dot_peak_gflops then
      info(('matmul="bf16", D=128 L=%d: fraction of the bf16 dot peak (%.0f)'):format(L, k.bf16_dot_peak_gflops),
        k.gflops / k.bf16_dot_peak_gflops)
    end
  else
    unmeasured(what, ">= 1.5", r and "the bench timed no avx512bf16 variant" or ("no avx512bf16 row: " .. err))
  end
end

-- 7c. multi-head latent attention's absorbed decode (the deepseek_v3_decode
-- preset: 128 query heads on one latent row of 576 values, V its first 512,
-- bf16): a decode call of 128 rows a kv head is GEMM-shaped, so the target
-- is a fraction of the peak: the FMA peak for the variant that multiplies in
-- f32, the bf16 dot peak for the avx512bf16 variant
if wanted("mla") then
  local lk = quick and 8192 or 32768
  progress(("decode deepseek_v3_decode Lq=1 Lk=%d, 1 thread"):format(lk))
  local r = bench("deepseek_v3_decode", {}, { ["seq-q"] = 1, ["seq-k"] = lk, threads = 1, ["no-reference"] = true,
    ["no-blas"] = true })
  record(("decode deepseek_v3_decode Lk=%d"):format(lk), r)
  local f32 = result(r, ISA)
  local what = ("MLA decode (DeepSeek-V3, bf16 cache) Lq=1 Lk=%d, 1 thread"):format(lk)
  if f32 then
    local frac = f32.gflops / f32.peak_gflops
    target(what .. ": GFLOP/s / FMA peak (f32 products)", frac, ">= 0.75", frac >= 0.75)
  end
  local dp = result(r, "avx512bf16")
  if dp and dp.bf16_dot_peak_gflops then
    local frac = dp.gflops / dp.bf16_dot_peak_gflops
    target(what .. ": GFLOP/s / bf16 dot peak (avx512bf16)", frac, ">= 0.75", frac >= 0.75)
    -- its class of bf16 pair products against the f32 panels the avx512
    -- variant's calls take, timed in the same run
    if f32 and ISA == "avx512" then
      info(what .. ": speed of avx512bf16 (bf16 pairs) over avx512 (f32 panels)", f32.seconds / dp.seconds)
    end
  else
    unmeasured(what .. ": GFLOP/s / bf16 dot peak (avx512bf16)", ">= 0.75", "this CPU runs no avx512bf16 variant")
  end
end

-- 7d. linear attention (kind = "linear", the linear_transformer preset:
-- H 8, D 64), 1 thread: GFLOP/s of the algorithm the kernels run (the bench
-- states its FLOP count) against the FMA peak, and causal against attngen's
-- own causal sdpa kernel at the same shape
local LINEAR = { { "causal", "causal=true", ">= 0.60", 0.60 }, { "non-causal", "causal=false", ">= 0.70", 0.70 } }
for _, c in ipairs(wanted("linear") and LINEAR or {}) do
  progress(("linear attention, %s, L=%d, 1 thread"):format(c[1], L))
  local r = bench("linear_transformer", { c[2] },
    { ["seq-q"] = L, threads = 1, isa = ISA, ["no-reference"] = true })
  record(("linear %s"):format(c[1]), r)
  local k = result(r, ISA)
  target(("linear attention, %s, H=8 D=64 L=%d: fraction of FMA peak"):format(c[1], L), k.gflops / k.peak_gflops,
    c[3], k.gflops / k.peak_gflops >= c[4])
  if c[1] == "causal" then
    local sd = bench("llama3_8b", with(H8, "head_dim=64", "causal=true"),
      { ["seq-q"] = L, threads = 1, isa = ISA, ["no-reference"] = true })
    record("sdpa causal D=64 (linear's comparison)", sd)
    local up = result(sd, ISA).seconds / k.seconds
    target(("linear attention, causal, L=%d: speed-up over causal sdpa (same shape)"):format(L), up, "> 1", up > 1)
  end
end

-- 7e. the attention of RNN encoder-decoders (kind = "additive" and "luong"),
-- one decoder step of a batch of 16 against 50 encoder states, 1 thread,
-- against the unfused OpenBLAS step a user would write (sgemm projections,
-- libm's tanhf element by element, sgemv with v, a softmax, the context),
-- timed in the same bench run.  Additive: the RNNsearch preset (Ds 1000,
-- Dh 2000, Da 1000) with U = H W_h^T precomputed, as a decoder loop keeps it
-- over its steps; the same run times the tanh loop on a shape where the tanh
-- terms dominate (the bench's "tanh" fields) and counts its FMAs per term
-- against the FMA peak.  Luong general: 1000-unit LSTM states.
if wanted("classic") then
  local STEP = { batch = 16, ["seq-q"] = 1, ["seq-k"] = 50, threads = 1, isa = ISA }
  progress("additive decoder step (RNNsearch), B=16 Lk=50, 1 thread")
  local opts = {}
  for k, v in pairs(STEP) do opts[k] = v end
  opts["precomputed-u"] = true
  local r = bench("bahdanau_rnnsearch", {}, opts)
  record("additive decoder step, U precomputed", r)
  local k, b = result(r, ISA), result(r, "openblas")
  local what = ("additive decoder step, U precomputed, B=16 Lk=50 Da=%d (RNNsearch): speed-up over unfused "
    .. "OpenBLAS"):format(r.attn_dim)
  if b then
    target(what, b.seconds / k.seconds, ">= 3", b.seconds / k.seconds >= 3)
  else
    unmeasured(what, ">= 3", "the bench timed no openblas row (OpenBLAS not installed?)")
  end
  local tw = ("tanh loop (additive, U precomputed, Lq=%d Lk=%d), %d FMAs a term: fraction of FMA peak")
    :format(r.tanh and r.tanh.seq_q or 0, r.tanh and r.tanh.seq_k or 0, r.tanh and r.tanh.fmas_per_term or 0)
  if k.tanh_fraction_of_peak then
    target(tw, k.tanh_fraction_of_peak, ">= 0.50", k.tanh_fraction_of_peak >= 0.50)
  else
    unmeasured(tw, ">= 0.50", "the bench measured no tanh loop rate (no FMA peak for " .. ISA .. " here?)")
  end
  progress("luong general decoder step, B=16 Lk=50, 1 thread")
  local g = bench("luong_general", {}, STEP)
  record("luong general decoder step", g)
  local gk, gb = result(g, ISA), result(g, "openblas")
  local gw = ("luong general decoder step, B=16 Lk=50 Ds=Dh=%d: speed-up over unfused OpenBLAS"):format(g.key_dim)
  if gb then info(gw, gb.seconds / gk.seconds) end
end

-- 8. decode: few query rows against a long KV cache, K/V bytes read per
-- second against the read bandwidth the bench measures in the same run
local LK = quick and { 4096, 8192 } or { 4096, 32768 }
local LONG = LK[#LK]
local decode_rows = {}
local function decode_row(preset, lk, threads, r)
  local k, b = result(r, ISA), result(r, "openblas")
  return { preset = preset, lk = lk, threads = threads, ms = k.seconds * 1e3, gbs = k.kv_gbs, bw = r.read_gbs,
    blas_ms = b and b.seconds * 1e3 }
end
local function decode(preset, lk, threads, round)
  progress(("decode %s Lk=%d, %d thread%s%s"):format(preset, lk, threads, threads == 1 and "" or "s",
    round and (", round " .. round) or ""))
  local r = bench(preset, {}, { ["seq-q"] = 1, ["seq-k"] = lk, threads = threads, isa = ISA,
    ["no-reference"] = true })
  record(("decode %s Lk=%d threads=%d%s"):format(preset, lk, threads, round and (" round=" .. round) or ""), r)
  return r, result(r, ISA)
end
if wanted("decode") then
  local r, k = decode("llama3_8b", LK[1], 1)
  decode_rows[#decode_rows + 1] = decode_row("llama3_8b", LK[1], 1, r)
  target(("decode Llama-3-8B Lq=1 Lk=%d, 1 thread: K/V read / read bandwidth"):format(LK[1]), k.kv_gbs / r.read_gbs,
    ">= 0.70", k.kv_gbs / r.read_gbs >= 0.70)
end
-- The long-cache targets are measured in rounds spread over the suite: this
-- machine has phases of seconds to minutes in which compute runs at half
-- speed while streaming reads do not, and one such phase would otherwise
-- decide both targets.  A round is one thread then two, each bench run
-- measuring the read bandwidth on its own thread count.  Each thread count
-- then counts with its best over the rounds, as a bench run counts the best
-- of its repetitions: the shortest time, against the highest read bandwidth
-- (the most demanding denominator).  Every round is printed.
local ROUNDS = quick and 2 or 3
local rounds = {}
-- the reduced K/V caches of the same shape (Q and O f32), one thread: the
-- K/V bytes halve, so the time should too
-- each cache type's goal: K/V bytes read a second against the read bandwidth
-- (llama.cpp's q8_0 blocks: the kernel dequantizes in registers, 1.06 bytes a
-- value; q4_0 reported, its 0.56 bytes a value leave the FMAs the bound)
-- matmul = "int8" on the block caches (each query row quantized to q8_0,
-- Q.K integer block dots): q8_0 at 0.75 of the bandwidth, q4_0 at 0.60
local CACHES = { { key = "f16", set = 'dtype={kv="f16"}', goal = 0.80 },
  { key = "bf16", set = 'dtype={kv="bf16"}', goal = 0.80 },
  { key = "q8_0", set = 'dtype={kv="q8_0"}', goal = 0.60 }, { key = "q4_0", set = 'dtype={kv="q4_0"}' },
  -- (on llama3_8b_q8kv, Llama-3-8B's shape without RoPE, which int8 products refuse)
  { key = "q8_0 int8", set = { 'matmul="int8"' }, config = "llama3_8b_q8kv", goal = 0.75 },
  { key = "q4_0 int8", set = { 'dtype={kv="q4_0"}', 'matmul="int8"' }, config = "llama3_8b_q8kv", goal = 0.60 } }
-- the rows of the long-cache targets: 1 thread, 2 threads, then each cache type's
local long_slots = wanted("decode") and { reserve(), reserve() }
for _ = 1, long_slots and #CACHES or 0 do long_slots[#long_slots + 1] = reserve() end
local decode_at = #decode_rows + 1 -- where the best rows go in the table
local function decode_round()
  local n = #rounds + 1
  local r1 = decode("llama3_8b", LONG, 1, n)
  local r2 = decode("llama3_8b", LONG, 2, n)
  rounds[n] = { one = decode_row("llama3_8b", LONG, 1, r1), two = decode_row("llama3_8b", LONG, 2, r2) }
  for _, c in ipairs(CACHES) do
    progress(("decode llama3_8b %s cache Lk=%d, 1 thread, round %d"):format(c.key, LONG, n))
    local r = bench(c.config or "llama3_8b", type(c.set) == "table" and c.set or { c.set },
      { ["seq-q"] = 1, ["seq-k"] = LONG, threads = 1, isa = ISA,
      ["no-reference"] = true, ["no-blas"] = true })
    record(("decode llama3_8b %s cache Lk=%d round=%d"):format(c.key, LONG, n), r)
    rounds[n][c.key] = decode_row("llama3_8b (" .. c.key .. " K/V)", LONG, 1, r)
  end
end
if wanted("decode") then decode_round() end

--- The other presets the decode table compares, derived from configs/: every
-- sdpa preset that runs the decode path (causal, decode_max_q > 0), one for each
-- distinct attention shape (heads, head dims, window, global tokens, score
-- terms), in name order; Llama-3-8B has its rows above.
local function decode_presets()
  util.root = root
  local families = require("families")
  local presets = require("presets")
  local names, seen = {}, {}
  local function shape(c)
    return table.concat({ c.heads_q, c.heads_kv, c.head_dim, c.head_dim_v, c.window.left, c.window.right,
      c.global_tokens, tostring(c.softcap), tostring(c.alibi), util.serialize(c.dtype) }, " ")
  end
  local llama = assert(presets.load("llama3_8b"))
  seen[shape(llama)] = true
  for _, name in ipairs(presets.list()) do
    local c = presets.load(name)
    if c and families.of(c).bench.decode_table and c.causal and c.decode_max_q > 0 and not seen[shape(c)] then
      seen[shape(c)] = true
      names[#names + 1] = name
    end
  end
  return names
end
local other_presets = wanted("decode") and decode_presets() or {}
for _, lk in ipairs(LK) do
  for _, preset in ipairs(other_presets) do
    decode_rows[#decode_rows + 1] = decode_row(preset, lk, 1, (decode(preset, lk, 1)))
  end
end

-- 9. where the decode path stops paying: Lq rows against a 4096-key cache,
-- decode path forced on (decode_max_q = 64) and off (0)
local crossover = {}
for _, lq in ipairs(not wanted("threshold") and {} or quick and { 1, 16, 64 } or { 1, 4, 8, 16, 32, 64 }) do
  progress(("decode threshold Lq=%d"):format(lq))
  local t = {}
  for _, mq in ipairs({ 64, 0 }) do
    local r = bench("llama3_8b", { "decode_max_q=" .. mq }, { ["seq-q"] = lq, ["seq-k"] = 4096, threads = 1,
      isa = ISA, ["no-reference"] = true, ["no-blas"] = true })
    record(("threshold Lq=%d decode_max_q=%d"):format(lq, mq), r)
    t[mq] = result(r, ISA).seconds
  end
  crossover[#crossover + 1] = { lq = lq, decode_ms = t[64] * 1e3, prefill_ms = t[0] * 1e3 }
end

-- 9a. chunked prefill against a long cache (a chunk of a chunked prefill, or
-- more drafted tokens than decode_max_q): Llama-3-8B, Lq query rows against
-- 4096 keys and a long cache, 1 thread, each pair in turn twice (the best of
-- each counts).  The prefill path packs a long cache's K and V a chunk at a
-- time (past 8 MiB of them), so its FLOP rate must not fall far below the
-- short cache's: the long cache's over the short one's, measured in the same
-- minutes, >= CHUNKED_GOAL.
local CHUNKED_GOAL, CHUNKED_LK = 0.90, quick and 16384 or 32768
local chunked = {}
for _, lq in ipairs(wanted("chunked") and { 32, 256 } or {}) do
  local best = {}
  for round = 1, 2 do
    for _, lk in ipairs({ 4096, CHUNKED_LK }) do
      progress(("chunked prefill Lq=%d Lk=%d, round %d"):format(lq, lk, round))
      local r = bench("llama3_8b", {}, { ["seq-q"] = lq, ["seq-k"] = lk, threads = 1, isa = ISA,
        ["no-reference"] = true, ["no-blas"] = true })
      record(("chunked prefill Lq=%d Lk=%d round=%d"):format(lq, lk, round), r)
      local k = result(r, ISA)
      if not best[lk] or k.gflops > best[lk].gflops then
        best[lk] = { ms = k.seconds * 1e3, gflops = k.gflops, peak = k.peak_gflops }
      end
    end
  end
  local x = { lq = lq, short = best[4096], long = best[CHUNKED_LK], lk = CHUNKED_LK }
  x.ratio = x.long.gflops / x.short.gflops
  chunked[#chunked + 1] = x
  target(("chunked prefill Llama-3-8B Lq=%d: FLOP rate Lk=%d / Lk=4096"):format(lq, CHUNKED_LK),
    x.ratio, (">= %.2f"):format(CHUNKED_GOAL), x.ratio >= CHUNKED_GOAL)
end

-- 9a. chunked prefill of 512 rows against a q8_0 cache (the prefill path
-- dequantizes K and V into the packed f32 panels a chunk at a time) against
-- the same call on an f32 cache, each in turn twice (the best of each
-- counts): the q8_0 cache's FLOP rate >= CHUNKED_Q8_GOAL of the f32 cache's
local CHUNKED_Q8_GOAL, chunked_q8 = 0.85, nil
if wanted("chunked") then
  local best = {}
  for round = 1, 2 do
    -- the same config both sides (no RoPE), its cache f32 or q8_0
    for _, c in ipairs({ { "f32", { 'dtype="f32"' } }, { "q8_0", {} } }) do
      progress(("chunked prefill Lq=512 Lk=%d, %s cache, round %d"):format(CHUNKED_LK, c[1], round))
      local r = bench("llama3_8b_q8kv", c[2], { ["seq-q"] = 512, ["seq-k"] = CHUNKED_LK, threads = 1, isa = ISA,
        ["no-reference"] = true, ["no-blas"] = true })
      record(("chunked prefill Lq=512 Lk=%d %s cache round=%d"):format(CHUNKED_LK, c[1], round), r)
      local k = result(r, ISA)
      if not best[c[1]] or k.gflops > best[c[1]].gflops then
        best[c[1]] = { ms = k.seconds * 1e3, gflops = k.gflops, peak = k.peak_gflops }
      end
    end
  end
  chunked_q8 = { lq = 512, lk = CHUNKED_LK, f32 = best.f32, q8_0 = best.q8_0 }
  chunked_q8.ratio = best.q8_0.gflops / best.f32.gflops
  target(("chunked prefill Llama-3-8B Lq=512 Lk=%d: FLOP rate q8_0 / f32 K/V"):format(CHUNKED_LK),
    chunked_q8.ratio, (">= %.2f"):format(CHUNKED_Q8_GOAL), chunked_q8.ratio >= CHUNKED_Q8_GOAL)
end

-- 9a. paged K/V (paged = {page = P}): Llama-3-8B's f16 cache of LONG keys in pools of pages read
-- through a shuffled block table (bench --paged), decode and a chunked prefill of 512 rows, 1
-- thread; each paged run against the contiguous cache (head-major for the HND pools) timed just
-- before it, the better of two rounds of the pair
local PAGED = { { 16, "bshd", 1, 1.05 }, { 16, "bhsd", 1, 1.05 }, { 1, "bshd", 1, 1.25 }, { 16, "bshd", 4, 1.10 },
  { 16, "bshd", 8, 1.10 }, { 16, "bshd", 512, 1.05 } }
-- pages smaller than a decode block (32 keys here): the streaming unit (Lq 1, where the CPU takes it)
-- over pages of 3 keys, and the blocked unit (Lq 4), whose blocks' rows are gathered into its scratch
-- (planner/sdpa.lua, plan_paged_decode), over pages of 1 and 3 keys
for _, c in ipairs({ { 3, "bshd", 1, 1.25 }, { 1, "bshd", 4, 1.25 }, { 3, "bshd", 4, 1.25 } }) do
  PAGED[#PAGED + 1] = c
end
for _, c in ipairs(wanted("paged") and PAGED or {}) do
  local page, layout, lq, goal = c[1], c[2], c[3], c[4]
  local order = layout == "bhsd" and "HND" or "NHD"
  local best
  for round = 1, 2 do
    progress(("paged f16 cache, page %d %s, Lq=%d Lk=%d, round %d"):format(page, order, lq, LONG, round))
    local opts = { ["seq-q"] = lq, ["seq-k"] = LONG, threads = 1, isa = ISA, ["no-reference"] = true,
      ["no-blas"] = true, ["kv-layout"] = layout }
    local base = bench("llama3_8b_f16kv", {}, opts)
    opts.paged = page
    local r = bench("llama3_8b_f16kv", {}, opts)
    record(("paged page=%d %s Lq=%d Lk=%d round=%d: contiguous"):format(page, order, lq, LONG, round), base)
    record(("paged page=%d %s Lq=%d Lk=%d round=%d"):format(page, order, lq, LONG, round), r)
    local ratio = result(r, ISA).seconds / result(base, ISA).seconds
    if not best or ratio < best then best = ratio end
  end
  target(("paged f16 cache (Llama-3-8B), page %d %s, Lq=%d Lk=%d: time / contiguous"):format(page, order, lq, LONG),
    best, ("<= %.2f"):format(goal), best <= goal)
end

-- 9b. short prompts: causal prefill, H 8, D 128, 1 thread (the targets at
-- 256, 512 and 1024 keys), and 9c. multi-token decode (speculative
-- decoding, beam search): Llama-3-8B, Lq query rows against Lk keys, 1
-- thread, against the roofline max(K/V bytes / read bandwidth,
-- visible-score FLOPs / FMA peak), each measured in the same bench run.
-- Both are measured in ROUNDS rounds spread over the suite, as the
-- long-cache decode is (one bench run times a length for about a second,
-- and a slow phase of this VM would otherwise decide a target): each row
-- counts with its best round and prints its median.  A prefill fraction
-- divides the best time's FLOP rate by the best one-thread FMA peak of the
-- whole suite (of the suite's variant), not by its own run's: a bench run
-- measures the peak in about a second, and a slow phase then gives a peak
-- too low (and a fraction too high, above 1 at times); the rows are judged
-- at the end, when every run's peak is known.  A decode row's ratio is its
-- best round's (time over the roofline of the same run).
local short_prompts = {}
local SHORT_GOALS = { [256] = 0.60, [512] = 0.72, [1024] = 0.78 }
local short_lengths = not wanted("short") and {} or quick and { 128, 256, 512, 1024 }
  or { 128, 256, 512, 1024, 2048, 4096 }
for i, l in ipairs(short_lengths) do
  short_prompts[i] = { l = l, rounds = {}, slot = SHORT_GOALS[l] and reserve() or nil }
end
local multi = {}
for _, lk in ipairs(wanted("multi") and LK or {}) do
  for _, lq in ipairs(quick and { 1, 2, 4, 8 } or { 1, 2, 4, 8, 16 }) do
    multi[#multi + 1] = { lq = lq, lk = lk, rounds = {},
      slot = lk == LONG and lq >= 2 and lq <= 8 and reserve() or nil }
  end
end
-- and from a q8_0 cache with integer products (matmul = "int8"), Lq 4 and 8
-- against LONG keys: its roofline takes Q.K's FLOPs at the int8 dot peak the
-- same bench run measures (vpdpbusd chains where the CPU has VNNI, else
-- vpmaddubsw: the instruction the kernel's dots take) and P.V's at the FMA peak
local INT8_SETS, INT8_GOAL = { 'matmul="int8"' }, 1.30 -- on llama3_8b_q8kv (no RoPE)
for _, lq in ipairs(wanted("multi") and { 4, 8 } or {}) do
  multi[#multi + 1] = { lq = lq, lk = LONG, int8 = true, rounds = {}, slot = reserve() }
end
local function short_multi_round()
  for _, x in ipairs(short_prompts) do
    local n = #x.rounds + 1
    progress(("causal prefill L=%d, 1 thread, round %d"):format(x.l, n))
    local r = bench("llama3_8b", with(H8, "causal=true"), { ["seq-q"] = x.l, threads = 1, isa = ISA,
      ["no-reference"] = true, ["no-blas"] = true })
    record(("causal prefill L=%d round=%d"):format(x.l, n), r)
    local k = result(r, ISA)
    x.rounds[n] = { ms = k.seconds * 1e3, gflops = k.gflops, run_peak = k.peak_gflops }
  end
  for _, x in ipairs(multi) do
    local n = #x.rounds + 1
    local cache = x.int8 and " q8_0 int8" or ""
    progress(("decode Llama-3-8B%s Lq=%d Lk=%d, 1 thread, round %d"):format(cache, x.lq, x.lk, n))
    local r = bench(x.int8 and "llama3_8b_q8kv" or "llama3_8b", x.int8 and INT8_SETS or {},
      { ["seq-q"] = x.lq, ["seq-k"] = x.lk, threads = 1, isa = ISA, ["no-reference"] = true, ["no-blas"] = true })
    record(("multi-token decode%s Lq=%d Lk=%d round=%d"):format(cache, x.lq, x.lk, n), r)
    local k = result(r, ISA)
    local bytes, flops = k.kv_gbs * k.seconds, k.gflops * k.seconds -- GB, GFLOP
    local compute = flops / k.peak_gflops
    if x.int8 then -- Q.K's share of the FLOPs at the int8 dot peak (the FMA peak where the bench has none)
      local qk = flops * r.head_dim / (r.head_dim + r.head_dim_v)
      compute = qk / (k.int8_dot_peak_gops or k.peak_gflops) + (flops - qk) / k.peak_gflops
    end
    local roof = math.max(bytes / r.read_gbs, compute)
    x.rounds[n] = { ms = k.seconds * 1e3, roof_ms = roof * 1e3, int8_peak = k.int8_dot_peak_gops,
      bound = bytes / r.read_gbs >= compute and "K/V reads" or "FLOPs" }
  end
end
short_multi_round()

if ROUNDS >= 2 and wanted("decode") then decode_round() end
if ROUNDS >= 2 then short_multi_round() end

--- The best and the median of a row's rounds, by key (the smallest first).
local function best_median(xs, key)
  local sorted = {}
  for i, x in ipairs(xs) do sorted[i] = x end
  table.sort(sorted, function(a, b) return a[key] < b[key] end)
  local n = #sorted
  local median = n % 2 == 1 and sorted[(n + 1) / 2][key] or (sorted[n / 2][key] + sorted[n / 2 + 1][key]) / 2
  return sorted[1], median
end

-- 9b. options that should cost next to nothing, each timed against the same
-- call without it: in alternating rounds (a slow phase of this machine would
-- otherwise land on one side only), each side counting with its best time,
-- the median of the rounds' ratios shown beside it
local OPTION_ROUNDS = quick and 2 or 3
--- `n_rounds` alternating rounds of preset with sets `off`, then with `on`
-- (the runs with it recorded): each side's best time (seconds) and the
-- median of the rounds' ratios, on / off.
local function alternate(what, n_rounds, preset, off, on, opts)
  local off_best, on_best, ratios = math.huge, math.huge, {}
  for n = 1, n_rounds do
    progress(("%s, round %d"):format(what, n))
    local t_off = result(bench(preset, off, opts), ISA).seconds
    local r = bench(preset, on, opts)
    record(("%s round=%d"):format(what, n), r)
    local t_on = result(r, ISA).seconds
    off_best, on_best = math.min(off_best, t_off), math.min(on_best, t_on)
    ratios[n] = { ratio = t_on / t_off }
  end
  local _, median = best_median(ratios, "ratio")
  return off_best, on_best, median
end
local OPTIONS = {
  { what = "entropy, causal prefill H=8 D=128 L=%d", on = "entropy=true", goal = 1.05, prefill = true },
  { what = "entropy, decode Llama-3-8B Lq=1 Lk=%d", on = "entropy=true", goal = 1.05 },
  { what = "rel_bias t5, causal prefill H=8 D=64 L=%d", on = 'rel_bias={kind="t5"}', goal = 1.15, prefill = true,
    base = { "head_dim=64" } },
  { what = "sinks, causal prefill H=8 D=128 L=%d", on = "sinks=true", goal = 1.03, prefill = true },
  { what = "sinks, decode Llama-3-8B Lq=1 Lk=%d", on = "sinks=true", goal = 1.03 },
  { what = "temperature, causal prefill H=8 D=128 L=%d", on = "temperature={scale=0.1,floor=8192}", goal = 1.03,
    prefill = true },
  -- qk_norm: the RMS norm of each query row, in the packing of Q (scalar f32 per row)
  { what = "qk_norm, causal prefill H=8 D=128 L=%d", on = "qk_norm={eps=1e-6}", goal = 1.03, prefill = true },
  { what = "qk_norm, decode Llama-3-8B Lq=1 Lk=%d", on = "qk_norm={eps=1e-6}", goal = 1.03 },
}
if wanted("options") then
  local LO, LKO = quick and 1024 or 4096, quick and 4096 or 16384
  for _, o in ipairs(OPTIONS) do
    local base = {}
    if o.prefill then
      base = with(H8, "causal=true")
      for _, b in ipairs(o.base or {}) do base[#base + 1] = b end
    end
    local opts = o.prefill and { ["seq-q"] = LO, threads = 1, isa = ISA, ["no-reference"] = true, ["no-blas"] = true }
      or { ["seq-q"] = 1, ["seq-k"] = LKO, threads = 1, isa = ISA, ["no-reference"] = true, ["no-blas"] = true }
    local what = o.what:format(o.prefill and LO or LKO)
    local off_best, on_best, median = alternate(what, OPTION_ROUNDS, "llama3_8b", base, with(base, o.on), opts)
    local ratio = on_best / off_best
    target(("%s: time / without (med. %.2f)"):format(what, median), ratio, ("<= %.2f"):format(o.goal),
      ratio <= o.goal)
  end
end

-- 9c. serving: the store of new rows into a paged cache against the copy
-- bandwidth its run measures, and RoPE fused into the kernels against the
-- same config without rope, in alternating rounds as in 9b (a config
-- without rope of Llama-3-8B's shape: llama3_8b_f16kv with f32 storage;
-- with it: the same plus the llama3_8b preset's rope)
local SERVING_ROUNDS = quick and 2 or 3
local ROPE = 'rope={style="neox",theta=500000}'
local NO_ROPE = { 'dtype="f32"' }
local serving = { rope = {} } -- append: the better append run; rope: the RoPE rows
if wanted("serving") then
  local append_best
  for n = 1, 2 do
    progress(("append 4096 rows, paged f16 cache, run %d"):format(n))
    local r = bench("llama3_8b_f16kv", {}, { append = 4096, paged = 16 })
    record(("append 4096 rows paged f16 run=%d"):format(n), r)
    if not append_best or r.of_copy > append_best.of_copy then append_best = r end
  end
  serving.append = append_best
  target("append 4096 rows, paged f16 cache Llama-3-8B P=16: moved / copy BW", append_best.of_copy,
    ">= 0.60", append_best.of_copy >= 0.60)
  local LR, LKR = quick and 1024 or 4096, quick and 8192 or 32768
  local cases = {
    { what = ("RoPE, causal prefill Llama-3-8B L=%d"):format(LR), opts = { ["seq-q"] = LR } },
    { what = ("RoPE, decode Llama-3-8B Lq=1 Lk=%d"):format(LKR), opts = { ["seq-q"] = 1, ["seq-k"] = LKR } },
  }
  for _, c in ipairs(cases) do
    local opts = { threads = 1, isa = ISA, ["no-reference"] = true, ["no-blas"] = true }
    for k, v in pairs(c.opts) do opts[k] = v end
    local off_best, on_best, median = alternate(c.what, SERVING_ROUNDS, "llama3_8b_f16kv", NO_ROPE,
      with(NO_ROPE, ROPE), opts)
    local ratio = on_best / off_best
    serving.rope[#serving.rope + 1] = { what = c.what, off_ms = off_best * 1e3, on_ms = on_best * 1e3, ratio = ratio,
      median_ratio = median }
    target(("%s: time / without (med. %.2f)"):format(c.what, median), ratio, "<= 1.03", ratio <= 1.03)
  end
end

-- 10. the sweep for the plot: GFLOP/s against L per implementation
local series, peak = {}, 0
local lengths = not wanted("sweep") and {} or quick and { 256, 512, 1024 } or { 256, 512, 1024, 2048, 4096 }
for _, l in ipairs(lengths) do
  progress(("sweep L=%d"):format(l))
  local r = bench("llama3_8b", H8, { ["seq-q"] = l, threads = 1 })
  record(("sweep L=%d"):format(l), r)
  for _, x in ipairs(r.results) do
    series[x.impl] = series[x.impl] or {}
    table.insert(series[x.impl], { l, x.gflops })
    if x.impl == ISA then peak = math.max(peak, x.peak_gflops) end
  end
end
if ROUNDS >= 3 and wanted("decode") then decode_round() end
if ROUNDS >= 3 then short_multi_round() end
progress("")
if tty then io.write("\r\27[K") end

-- the short-prompt targets, against the suite's best one-thread FMA peak
local suite_peak = 0
for _, run in ipairs(runs) do
  if run.data.threads == 1 then
    for _, x in ipairs(run.data.results or {}) do -- (append runs have no results)
      if x.impl == ISA and x.peak_gflops > suite_peak then suite_peak = x.peak_gflops end
    end
  end
end
for _, x in ipairs(short_prompts) do
  local best, median_ms = best_median(x.rounds, "ms")
  x.ms, x.gflops, x.run_peak, x.median_ms = best.ms, best.gflops, best.run_peak, median_ms
  x.frac = x.gflops / suite_peak
  if x.slot then
    target(("causal prefill H=8 D=128 L=%d, 1 thread: fraction of FMA peak (%.0f)"):format(x.l, suite_peak), x.frac,
      (">= %.2f"):format(SHORT_GOALS[x.l]), x.frac >= SHORT_GOALS[x.l], nil, x.slot)
  end
end
for _, x in ipairs(multi) do
  for _, rd in ipairs(x.rounds) do rd.ratio = rd.ms / rd.roof_ms end
  local best, median_ratio = best_median(x.rounds, "ratio")
  x.ms, x.roof_ms, x.bound, x.ratio, x.median_ratio = best.ms, best.roof_ms, best.bound, best.ratio, median_ratio
  if x.slot and x.int8 then
    target(("decode Llama-3-8B q8_0 int8 Lq=%d Lk=%d, 1 thread: time / roofline"):format(x.lq, x.lk),
      x.ratio, ("<= %.2f"):format(INT8_GOAL), x.ratio <= INT8_GOAL, nil, x.slot)
  elseif x.slot then
    target(("decode Llama-3-8B Lq=%d Lk=%d, 1 thread: time / roofline"):format(x.lq, x.lk), x.ratio,
      "<= 1.25", x.ratio <= 1.25, nil, x.slot)
  end
end

-- the long-cache decode targets: each thread count's best over the rounds
local best_one, best_two
local function best_of_rounds(which)
  local b
  for _, rd in ipairs(rounds) do
    local d = rd[which]
    if not b then
      b = {}
      for key, x in pairs(d) do b[key] = x end
    else
      if d.ms < b.ms then b.ms, b.gbs = d.ms, d.gbs end
      b.bw = math.max(b.bw, d.bw)
      if d.blas_ms and (not b.blas_ms or d.blas_ms < b.blas_ms) then b.blas_ms = d.blas_ms end
    end
  end
  return b
end
if #rounds > 0 then
  best_one, best_two = best_of_rounds("one"), best_of_rounds("two")
  target(("decode Llama-3-8B Lq=1 Lk=%d, 1 thread: K/V read / read bandwidth"):format(LONG), best_one.gbs / best_one.bw,
    ">= 0.80", best_one.gbs / best_one.bw >= 0.80, nil, long_slots[1])
  target(("decode Llama-3-8B Lk=%d: 2 threads vs 1"):format(LONG), best_one.ms / best_two.ms, ">= 1.6",
    best_one.ms / best_two.ms >= 1.6, nil, long_slots[2])
  for i, c in ipairs(CACHES) do
    local b = best_of_rounds(c.key)
    local what = ("decode Llama-3-8B, %s K/V, Lq=1 Lk=%d, 1 thread: K/V read / read bandwidth"):format(c.key, LONG)
    if c.goal then
      target(what, b.gbs / b.bw, (">= %.2f"):format(c.goal), b.gbs / b.bw >= c.goal, nil, long_slots[2 + i])
    else
      info(what, b.gbs / b.bw, nil, long_slots[2 + i])
    end
    table.insert(decode_rows, decode_at, b)
  end
  table.insert(decode_rows, decode_at, best_two)
  table.insert(decode_rows, decode_at, best_one)
end

-- report
print(("attngen bench suite (%s%s): one run, ratios measured side by side"):format(quick and "quick" or "full",
  only and (", sections " .. table.concat(util.sorted_keys(only), ",")) or ""))
print(("%-70s %10s %10s  %s"):format("target", "measured", "goal", "holds"))
local all = true
for _, r in ipairs(rows) do
  print(("%-70s %10s %10s  %s"):format(r.what, r.value, r.goal, r.info and "-" or r.ok and "yes" or "NO"))
  all = all and (r.info or r.ok)
end
for _, n in ipairs(notes) do print("  note: " .. n) end
if #decode_rows > 0 then
  print()
  print(("decode, Lq = 1, %s (K/V: bytes every implementation must read; read BW: measured in the same run)")
    :format(isa_name()))
  print(("%-22s %7s %7s %10s %10s %10s %8s %12s"):format("model", "Lk", "threads", "time (ms)", "K/V GB/s",
    "read BW", "of BW", "OpenBLAS ms"))
  for _, d in ipairs(decode_rows) do
    print(("%-22s %7d %7d %10.3f %10.2f %10.2f %7.0f%% %12s"):format(d.preset, d.lk, d.threads, d.ms, d.gbs, d.bw,
      100 * d.gbs / d.bw, d.blas_ms and ("%.2f"):format(d.blas_ms) or "-"))
  end
end
if #rounds > 0 then
  print()
  -- every round of the long-cache targets; the last column, what the machine
  -- itself gives a second thread, is the ceiling of the two-thread target
  print(("Llama-3-8B Lq=1 Lk=%d in %d rounds over the suite (best: each column's best, which gives the targets)")
    :format(LONG, #rounds))
  print(("%7s %14s %8s %16s %8s %16s"):format("round", "1 thread (ms)", "of BW", "2 threads (ms)", "2 vs 1",
    "read BW 2 vs 1"))
  for n, rd in ipairs(rounds) do
    print(("%7s %14.3f %7.0f%% %16.3f %8.2f %16.2f"):format(n, rd.one.ms, 100 * rd.one.gbs / rd.one.bw, rd.two.ms,
      rd.one.ms / rd.two.ms, rd.two.bw / rd.one.bw))
  end
  print(("%7s %14.3f %7.0f%% %16.3f %8.2f %16.2f"):format("best", best_one.ms, 100 * best_one.gbs / best_one.bw,
    best_two.ms, best_one.ms / best_two.ms, best_two.bw / best_one.bw))
end
if #crossover > 0 then
  print()
  print("decode path against the prefill kernel, Llama-3-8B, Lk = 4096, 1 thread (decode_max_q picks)")
  print(("%6s %14s %14s"):format("Lq", "decode (ms)", "prefill (ms)"))
  for _, c in ipairs(crossover) do
    print(("%6d %14.3f %14.3f"):format(c.lq, c.decode_ms, c.prefill_ms))
  end
end
if #short_prompts > 0 then
  print()
  print(("causal prefill, H = 8, D = 128, 1 thread, %s (short prompts; of peak: of the suite's best"
    .. " one-thread peak, %.0f GFLOP/s; run's peak: the one its own run measured)"):format(isa_name(), suite_peak))
  print(("best of %d rounds (median: the rounds' median time)"):format(#short_prompts[1].rounds))
  print(("%6s %10s %12s %10s %10s %12s"):format("L", "time (ms)", "median (ms)", "GFLOP/s", "of peak", "run's peak"))
  for _, x in ipairs(short_prompts) do
    print(("%6d %10.3f %12.3f %10.1f %9.0f%% %12.0f"):format(x.l, x.ms, x.median_ms, x.gflops, 100 * x.frac,
      x.run_peak))
  end
end
if #chunked > 0 then
  print()
  print(("chunked prefill against a cache, Llama-3-8B, 1 thread, %s (best of 2 runs each)"):format(isa_name()))
  print(("%6s %7s %10s %10s %10s"):format("Lq", "Lk", "time (ms)", "GFLOP/s", "run's peak"))
  for _, x in ipairs(chunked) do
    for _, c in ipairs({ { 4096, x.short }, { x.lk, x.long } }) do
      print(("%6d %7d %10.3f %10.1f %10.0f"):format(x.lq, c[1], c[2].ms, c[2].gflops, c[2].peak))
    end
  end
end
if chunked_q8 then
  print()
  print(("chunked prefill against a q8_0 and an f32 cache, Llama-3-8B, Lq = 512, Lk = %d, 1 thread, %s (best of 2)")
    :format(chunked_q8.lk, isa_name()))
  print(("%6s %10s %10s %10s"):format("K/V", "time (ms)", "GFLOP/s", "run's peak"))
  for _, c in ipairs({ "f32", "q8_0" }) do
    print(("%6s %10.3f %10.1f %10.0f"):format(c, chunked_q8[c].ms, chunked_q8[c].gflops, chunked_q8[c].peak))
  end
end
if serving.append then
  local a = serving.append
  print()
  print(("serving, Llama-3-8B, 1 thread (append: the best of 2 runs; RoPE: each side's best of %d alternating"
    .. " rounds)"):format(SERVING_ROUNDS))
  print(("append %d rows into a paged f16 cache (P=%d): %.3f ms, %.2f GB/s written, %.2f GB/s moved (read plus"
    .. " written), copy BW %.2f GB/s: %.0f%%"):format(a.append_rows, a.page, a.seconds * 1e3, a.written_gbs,
    a.moved_gbs, a.copy_gbs, 100 * a.of_copy))
  print(("%-44s %12s %12s %8s %8s"):format("RoPE", "without (ms)", "with (ms)", "ratio", "median"))
  for _, x in ipairs(serving.rope) do
    print(("%-44s %12.3f %12.3f %8.3f %8.3f"):format(x.what, x.off_ms, x.on_ms, x.ratio, x.median_ratio))
  end
end
if #multi > 0 then
  print()
  print(("multi-token decode, Llama-3-8B, 1 thread, %s (roofline: max(K/V bytes / read BW, FLOPs / FMA peak))")
    :format(isa_name()))
  print(("the round with the lowest ratio of %d (median: the rounds' median ratio)"):format(#multi[1].rounds))
  print(("%6s %7s %10s %12s %8s %8s  %s"):format("Lq", "Lk", "time (ms)", "roofline ms", "ratio", "median",
    "bound by"))
  for _, x in ipairs(multi) do
    local ip = x.int8 and x.rounds[1].int8_peak
    local note = x.int8 and ("  (q8_0 K/V, matmul int8: Q.K at the int8 dot peak, %s)")
      :format(ip and ("%.0f GOP/s"):format(ip) or "not measured: at the FMA peak") or ""
    print(("%6d %7d %10.3f %12.3f %8.2f %8.2f  %s%s"):format(x.lq, x.lk, x.ms, x.roof_ms, x.ratio, x.median_ratio,
      x.bound, note))
  end
end
util.makepath(out)
util.write_atomic(out .. "/results.json", json.encode({ quick = quick, isa = ISA, runs = runs, targets = rows,
  decode = decode_rows, decode_rounds = rounds, decode_threshold = crossover, short_prompts = short_prompts,
  chunked_prefill = chunked, multi_token_decode = multi, serving = serving,
  chunked_prefill_q8_0 = chunked_q8,
  sections = only and util.sorted_keys(only) or nil },
  { indent = true }) .. "\n")
if partial then partial:close(); os.remove(partial_path) end
if #lengths > 0 then
  write_plot(series, peak)
  print(("wrote %s/results.json and %s/prefill.svg"):format(out, out))
else
  print(("wrote %s/results.json"):format(out))
end
os.exit(all and 0 or 1)
