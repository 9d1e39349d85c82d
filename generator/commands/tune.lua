--- attngen tune CONFIG [--seq N,N...]: time tile candidates, keep the fastest
-- per shape bucket (prefill, decode) in the tuning file, for tile = "auto".
local build = require("build")
local families = require("families")
local planner = require("planner")
local presets = require("presets")
local gnuplot = require("gnuplot")
local plots = require("plots")
local tune = require("tune")
local tunedb = require("tunedb")
local util = require("util")

local M = {}

function M.add_to_parser(parser)
  local c = parser:command("tune", "Time tile candidates of CONFIG and record the fastest in the tuning file.")
    :epilog("The tuning file ($ATTNGEN_CACHE/tune.json unless --db or ATTNGEN_TUNE_DB say otherwise) is "
      .. "read by generate, run, check and bench for configs with tile = \"auto\"; ATTNGEN_TUNE_DB=none "
      .. "turns it off.")
  c:argument("config", "Config file or preset name.")
  c:option("--set", "Override a config key: key=value (a Lua literal); repeatable."):count("*")
  c:option("--seq", "Prefill sequence lengths, Lq = Lk, comma-separated.", table.concat(tune.DEFAULT_SEQS, ","))
    :argname("N,...")
  c:option("--decode-seq",
    "Keys of the decode shape (timed at the fewest query rows that take the blocked decode kernel).",
    tostring(tune.DEFAULT_DECODE_SEQ))
    :argname("N"):convert(tonumber)
  c:option("--only", "Tune one bucket only."):choices({ "prefill", "decode" })
  c:option("--isa", "ISA variant to tune (default: the best of the config's that this CPU runs).")
    :argname("NAME")
  c:option("--threads", "Threads (0: OpenMP's default).", "1"):argname("N"):convert(tonumber)
  c:flag("--exhaustive", "Time the full grid, without pruning or racing (slow).")
  c:option("--tiles", "Time only these prefill tiles (and the heuristic default)."):argname("QxKV,...")
  c:option("--blocks", "Time only these decode blocks (and the heuristic default)."):argname("N,...")
  c:option("--db", "Tuning file to merge the results into."):argname("FILE")
  c:option("--plot", "Write a heatmap of GFLOP/s over the candidates."):argname("FILE.svg")
  c:flag("--list", "Print the candidates and exit.")
end

local function wall() -- seconds, for the tune's own duration
  local ok, out = util.run_capture("date +%s.%N")
  return ok and tonumber(out:match("[%d%.]+")) or os.time()
end

--- "96x128,48x64" -> { {q=96, kv=128}, {q=48, kv=64} } (the schema's rules).
local function parse_tiles(text)
  local tiles = {}
  for item in (text .. ","):gmatch("([^,]*),") do
    local q, kv = item:match("^%s*(%d+)x(%d+)%s*$")
    q, kv = tonumber(q), tonumber(kv)
    if not q or q < 1 or q > 1024 or kv < 16 or kv > 4096 or kv % 16 ~= 0 then
      return nil, ("--tiles: '%s' is not a tile QxKV (q 1..1024, kv a multiple of 16 in 16..4096)"):format(item)
    end
    tiles[#tiles + 1] = { q = q, kv = kv }
  end
  return tiles
end

local function parse_blocks(text, cfg)
  local blocks = {}
  local chunk = planner.family(cfg.kind).DECODE_CHUNK
  for item in (text .. ","):gmatch("([^,]*),") do
    local n = tonumber(item)
    if not n or n ~= math.floor(n) or n < 1 or n > chunk then
      return nil, ("--blocks: '%s' is not a decode block (keys per pass, 1..%d: the keys per split)")
        :format(item, chunk)
    end
    blocks[#blocks + 1] = n
  end
  return blocks
end

local function parse_seqs(text, decode_max_q)
  local seqs = {}
  for item in (text .. ","):gmatch("([^,]*),") do
    local n = tonumber(item)
    if not n or n ~= math.floor(n) or n < 1 or n > 1048576 then
      return nil, ("--seq: '%s' is not a sequence length (an integer 1..1048576)"):format(item)
    end
    if n <= decode_max_q then
      return nil, ("--seq: %d query rows take the decode path (decode_max_q = %d); prefill lengths must be larger")
        :format(n, decode_max_q)
    end
    seqs[#seqs + 1] = n
  end
  table.sort(seqs)
  return seqs
end

--- Progress: on a terminal a bar redrawn in place as runs finish (round,
-- candidate n/N of the round, best so far); otherwise one line per candidate
-- when a shape is done.
local function progress_printer()
  local tty = util.execute("test -t 1") == 0 and os.getenv("TERM") ~= "dumb"
  local shape, count, done, round, best = nil, 0, 0, 0, nil
  local p = {}
  local function best_text()
    return best and ("best %s %.1f GFLOP/s"):format(best.label, best.gflops) or "best -"
  end
  function p.shape(ev)
    if tty and shape then io.stdout:write("\n") end
    shape = ("%s %dx%d"):format(ev.bucket, ev.seq_q, ev.seq_k)
    count, done, round, best = ev.candidates, 0, 0, nil
  end
  function p.tick(ev)
    if ev.round ~= round then round, done = ev.round, 0 end
    done = done + 1
    if ev.gflops > 0 and (not best or ev.gflops > best.gflops) then best = ev end
    if tty then
      local width = 16
      local fill = math.min(width, math.floor(width * done / math.max(count, 1) + 0.5))
      io.stdout:write(("\r%-16s %s [%s%s] %d/%d  %s\027[K"):format(shape,
        round == 0 and "warm-up" or ("round %d"):format(round), ("#"):rep(fill), ("-"):rep(width - fill),
        done, count, best_text()))
      io.stdout:flush()
    end
  end
  function p.result(ev) -- ev.n: the result's number in this shape
    if tty then return end
    print(("%-16s %3d/%-3d %-22s %8.1f GFLOP/s  %3d runs  (%s)"):format(shape, ev.n, count, ev.label, ev.gflops,
      ev.runs, best_text()))
  end
  function p.failed(ev)
    if tty then io.stdout:write("\r\027[K") end
    print(("%-16s %-22s FAILED: %s"):format(shape or "", ev.label, ev.message or "?"))
  end
  function p.finish()
    if tty and shape then io.stdout:write("\n") end
    shape = nil
    io.stdout:flush()
  end
  return p
end

--- The heatmap panels: one per shape, candidates on a grid (prefill: rows
-- tile.q, columns tile.kv; decode: rows chunk, columns block).
local function plot_spec(cfg, isa, list, results, shapes, picks)
  local panels = {}
  for _, s in ipairs(shapes) do
    local rows, cols, rseen, cseen = {}, {}, {}, {}
    for _, c in ipairs(list) do
      if c.bucket == s.bucket then
        local r = s.bucket == "prefill" and c.tile.q or c.tile.chunk
        local col = s.bucket == "prefill" and c.tile.kv or c.tile.block
        if not rseen[r] then rseen[r] = true; rows[#rows + 1] = r end
        if not cseen[col] then cseen[col] = true; cols[#cols + 1] = col end
      end
    end
    table.sort(rows)
    table.sort(cols)
    local rindex, cindex = {}, {}
    for i, r in ipairs(rows) do rindex[r] = i end
    for i, col in ipairs(cols) do cindex[col] = i end
    local values, mark = {}, nil
    for i = 1, #rows do values[i] = {} end
    for i, c in ipairs(list) do
      if c.bucket == s.bucket then
        local r = rindex[s.bucket == "prefill" and c.tile.q or c.tile.chunk]
        local col = cindex[s.bucket == "prefill" and c.tile.kv or c.tile.block]
        values[r][col] = results[i] and results[i][s.key] or nil
        if picks[s.bucket] == i then mark = { r, col } end
      end
    end
    panels[#panels + 1] = {
      title = ("%s, Lq = %d, Lk = %d"):format(s.bucket, s.seq_q, s.seq_k),
      rows = rows, cols = cols, values = values, mark = mark,
      ylabel = s.bucket == "prefill" and "tile.q" or "keys per split",
      xlabel = s.bucket == "prefill" and "tile.kv" or "keys per block",
    }
  end
  return {
    title = ("attngen tune %s: GFLOP/s on %s, %s"):format(cfg.name, tunedb.host().cpu, isa),
    subtitle = "Outlined: the pick (best over all shapes of its bucket). Grey: not timed (pruned or raced out).",
    panels = panels,
  }
end

-- ---- the steps of a run -----------------------------------------------------
-- A run's state t: args, cfg, seqs, isa, do_prefill, do_decode, cands,
-- host, list (the candidates in the program's order), exe, and after timing
-- results, shapes, failures, threads, clock.

--- Checks the numeric options; returns the prefill lengths, or nil, err.
local function check_numbers(args, cfg)
  local seqs, serr = parse_seqs(args.seq, cfg.decode_max_q or 0)
  if not seqs then return nil, serr end
  if not args.decode_seq or args.decode_seq ~= math.floor(args.decode_seq) or args.decode_seq < 1
      or args.decode_seq > 1048576 then
    return nil, "--decode-seq must be an integer 1..1048576"
  end
  if not args.threads or args.threads < 0 or args.threads ~= math.floor(args.threads) then
    return nil, "--threads must be an integer >= 0"
  end
  return seqs
end

--- The ISA: given, or what the dispatcher would pick here.  Returns it or nil, err.
local function pick_isa(args, cfg)
  local isa = args.isa
  if isa then
    local listed = false
    for _, n in ipairs(cfg.isa) do listed = listed or n == isa end
    if not listed then
      return nil, ("--isa %s: not one of the config's ISAs (%s)"):format(isa, table.concat(cfg.isa, ", "))
    end
    if not tunedb.host().isas[isa] then return nil, ("--isa %s: this CPU cannot run it"):format(isa) end
    return isa
  end
  isa = tunedb.best_isa(cfg)
  if not isa then
    return nil, ("none of the config's ISAs (%s) runs on this CPU"):format(table.concat(cfg.isa, ", "))
  end
  return isa
end

--- The candidates of the buckets being tuned (t.cands, t.do_prefill,
-- t.do_decode); returns true or nil, err.
local function candidate_set(t)
  local args, cfg = t.args, t.cfg
  local family = families.of(cfg)
  local buckets = {}
  for _, b in ipairs(family.tune.buckets) do buckets[b] = true end
  t.do_prefill = args.only ~= "decode"
  t.do_decode = args.only ~= "prefill" and buckets.decode and (cfg.decode_max_q or 0) > 0
  if args.only and not buckets[args.only] then
    return nil, ("%s is %s, which has no %s path: nothing to tune with --only %s")
      :format(cfg.name, family.noun, args.only, args.only)
  end
  if args.only == "decode" and cfg.decode_max_q == 0 then
    return nil, ("%s has no decode path (decode_max_q = 0): nothing to tune with --only decode"):format(cfg.name)
  end
  local copts = { exhaustive = args.exhaustive }
  if args.tiles then
    local tiles, terr = parse_tiles(args.tiles)
    if not tiles then return nil, terr end
    copts.tiles = tiles
  end
  if args.blocks then
    if not buckets.decode then
      return nil, ("--blocks: %s is %s, which has no decode path: its blocks are not tuned"):format(cfg.name,
        family.noun)
    end
    local blocks, berr = parse_blocks(args.blocks, cfg)
    if not blocks then return nil, berr end
    copts.blocks = blocks
  end
  t.cands = tune.candidates(cfg, t.isa, copts)
  if not t.do_prefill then t.cands.prefill = {} end
  if not t.do_decode then t.cands.decode = {} end
  return true
end

--- --list: prints the candidates.
local function print_candidates(cands)
  for _, bucket in ipairs(tunedb.BUCKETS) do
    for _, c in ipairs(cands[bucket]) do
      print(("%-8s %s%s"):format(bucket, tune.label(bucket, c), c.heuristic and "  (heuristic default)" or ""))
    end
  end
end

--- The tuning file, checked writable (and --plot's file) before the long
-- run.  Returns its path or nil, err.
local function output_file(args)
  local db = args.db or tunedb.default_path()
  if not db then
    return nil, "ATTNGEN_TUNE_DB=none turns the tuning file off; give one with --db FILE"
  end
  local ok, werr = tunedb.check_writable(db)
  if not ok then return nil, werr end
  if args.plot then
    local pok, perr = tunedb.check_writable(args.plot)
    if not pok then return nil, (perr:gsub("the tuning file", "the plot")) end
    local fok, ferr = gnuplot.format(args.plot)
    if not fok then return nil, (ferr:gsub("^%-o", "--plot")) end
    local gok, gerr = gnuplot.available()
    if not gok then return nil, gerr end
  end
  return db
end

--- Prints what is tuned and builds (or finds) the one program with every
-- candidate (t.list, t.exe).  Returns true or nil, err.
local function compile(t)
  local cfg, cands = t.cfg, t.cands
  local total = #cands.prefill + #cands.decode
  if cfg.tile ~= "auto" then
    print(("note: %s sets tile = { q = %d, kv = %d }; tuning results apply to configs with tile = \"auto\"")
      :format(cfg.name, cfg.tile.q, cfg.tile.kv))
  end
  print(("%s on %s, %s: %d prefill + %d decode candidates%s"):format(cfg.name, t.host.cpu, t.isa,
    #cands.prefill, #cands.decode, t.args.exhaustive and " (exhaustive)" or ""))
  local note = families.of(cfg).tune.note
  if note then print(note) end
  local files, list = tune.sources(cfg, t.isa, cands)
  t.list = list
  print(("compiling %d candidates into one program..."):format(total))
  io.stdout:flush()
  local t0 = wall()
  local exe, built = build.ensure_tuner(cfg.name, files)
  if not exe then return nil, built end
  t.exe = exe
  if built then
    print(("  compiled in %.1f s"):format(wall() - t0))
  else
    print("  found in the build cache")
  end
  return true
end

--- Runs the timing program: t.results[i][shape key] = GFLOP/s, t.shapes,
-- t.failures, t.threads, t.clock.  Returns true or nil, err.
local function time_candidates(t)
  local args, cands = t.args, t.cands
  local results, shapes, failures, nresults = {}, {}, {}, 0
  t.results, t.shapes, t.failures = results, shapes, failures
  local progress = progress_printer()
  local decode_q, why = 1, nil
  if t.do_decode and #cands.decode > 0 then decode_q, why = tune.decode_rows(t.cfg, t.isa) end
  if why then print(why) end
  local argv = tune.driver_args({ isa = t.isa, threads = args.threads, seqs = t.seqs, decode_seq = args.decode_seq,
    decode_q = decode_q, prefill = t.do_prefill and #cands.prefill > 0, decode = t.do_decode and #cands.decode > 0,
    exhaustive = args.exhaustive, count = #cands.prefill })
  t.threads = args.threads
  local rok, rerr = tune.run_driver(t.exe, argv, function(ev)
    if ev.event == "start" then
      t.threads, t.clock = ev.threads, ev.clock
      print(("timing on %d thread%s, %s"):format(t.threads, t.threads == 1 and "" or "s",
        t.clock == "cpu" and "thread CPU time (time other processes take is not counted)" or "wall time"))
    elseif ev.event == "shape" then
      local key = ("%s:%d:%d"):format(ev.bucket, ev.seq_q, ev.seq_k)
      shapes[#shapes + 1] = { key = key, bucket = ev.bucket, seq_q = ev.seq_q, seq_k = ev.seq_k }
      progress.shape(ev)
      nresults = 0
    elseif ev.event == "tick" then
      progress.tick(ev)
    elseif ev.event == "result" then
      local i = ev.index + 1
      results[i] = results[i] or {}
      results[i][shapes[#shapes].key] = ev.gflops
      nresults = nresults + 1
      ev.n = nresults
      progress.result(ev)
    elseif ev.event == "failed" then
      failures[#failures + 1] = ("%s at %dx%d: %s"):format(ev.label, ev.seq_q, ev.seq_k, ev.message)
      progress.failed(ev)
    end
  end)
  progress.finish()
  if not rok and #failures == 0 then return nil, "tune: " .. rerr end
  return true
end

local function round2(x) return math.floor(x * 100 + 0.5) / 100 end

--- The pick of one bucket: returns the index of the best candidate, the
-- tuning file's entry for it and the line that reports it, or nil when no
-- candidate of the bucket was timed on all its shapes.
local function bucket_pick(t, bucket)
  local list, results = t.list, t.results
  local keys, per_shape = {}, {}
  for _, s in ipairs(t.shapes) do
    if s.bucket == bucket then keys[#keys + 1] = s.key; per_shape[#per_shape + 1] = s end
  end
  local best, scores = tune.choose(list, results, bucket, keys)
  if not best then return nil end
  local heur, timed = nil, 0
  for i, c in ipairs(list) do
    if c.bucket == bucket and c.heuristic then heur = i end
    if c.bucket == bucket and results[i] then timed = timed + 1 end
  end
  local measured, detail = {}, {}
  for _, s in ipairs(per_shape) do
    measured[#measured + 1] = { seq_q = s.seq_q, seq_k = s.seq_k, gflops = results[best][s.key],
      heuristic_gflops = heur and results[heur] and results[heur][s.key] or nil }
    detail[#detail + 1] = ("%dx%d: %.1f"):format(s.seq_q, s.seq_k, results[best][s.key])
  end
  local tile = {}
  for k, v in pairs(list[best].tile) do
    if k ~= "heuristic" then tile[k] = v end
  end
  local entry = tunedb.entry({
    tile = tile, gflops = round2(scores[best]),
    cpu = t.host.cpu, isa = t.isa, bucket = bucket, config = t.cfg.name, threads = t.threads, clock = t.clock,
    shapes = measured, candidates = timed, exhaustive = t.args.exhaustive or false,
    heuristic = heur and { tile = list[heur].label, gflops = scores[heur] and round2(scores[heur]) or nil } or nil,
  })
  local vs = ""
  if heur and scores[heur] then
    vs = ("; heuristic %s: %.1f GFLOP/s (tuned %+.1f%%)"):format(list[heur].label, scores[heur],
      100 * (scores[best] / scores[heur] - 1))
  end
  local line = ("%-8s %s: %.1f GFLOP/s (%s)%s"):format(bucket, list[best].label, scores[best],
    table.concat(detail, ", "), vs)
  return best, entry, line
end

--- Chooses per bucket and prints the picks.  Returns the entries to
-- record ({ [descriptor] = entry }), their count, and the pick of each
-- bucket (candidate index).
local function choose_all(t)
  local entries, picks, nentries, lines = {}, {}, 0, {}
  for _, bucket in ipairs(tunedb.BUCKETS) do
    local best, entry, line = bucket_pick(t, bucket)
    if best then
      picks[bucket] = best
      entries[tunedb.descriptor(t.cfg, bucket, t.isa, t.host.cpu)] = entry
      nentries = nentries + 1
      lines[#lines + 1] = line
    end
  end
  for _, l in ipairs(lines) do print(l) end
  return entries, nentries, picks
end

--- --plot: writes the heatmap.  Returns true or nil, err.
local function write_plot(t, picks)
  local ok, err = gnuplot.render(t.args.plot, plots.heatmap(plot_spec(t.cfg, t.isa, t.list, t.results, t.shapes,
    picks)))
  if not ok then return nil, err end
  print("wrote " .. t.args.plot)
  return true
end

function M.run(args)
  local started = wall()
  local cfg, display = presets.load(args.config, args.set)
  if not cfg then return nil, display end
  local family = families.of(cfg)
  if family.unsupported.tune then
    return nil, ("tune: %s is %s, %s"):format(display, family.noun, family.unsupported.tune)
  end
  local t = { args = args, cfg = cfg }
  local ok, err
  t.seqs, err = check_numbers(args, cfg)
  if not t.seqs then return nil, err end
  t.isa, err = pick_isa(args, cfg)
  if not t.isa then return nil, err end
  ok, err = candidate_set(t)
  if not ok then return nil, err end
  if args.list then
    print_candidates(t.cands)
    return 0
  end
  local db, derr = output_file(args)
  if not db then return nil, derr end
  t.host = tunedb.host()
  ok, err = compile(t)
  if not ok then return nil, err end
  ok, err = time_candidates(t)
  if not ok then return nil, err end

  local entries, nentries, picks = choose_all(t)
  if args.plot then
    ok, err = write_plot(t, picks)
    if not ok then return nil, err end
  end
  if nentries > 0 then
    local mok, merr = tunedb.merge(db, entries)
    if not mok then return nil, merr end
    print(("recorded %d result%s in %s (%.1f s)"):format(nentries, nentries == 1 and "" or "s",
      tunedb.display_path(db), wall() - started))
  end
  local failures = t.failures
  if #failures > 0 then
    io.stderr:write(("attngen: tune: %d candidate%s failed (left out): %s\n"):format(#failures,
      #failures == 1 and "" or "s", table.concat(failures, "; ")))
    return 1
  end
  if nentries == 0 then return nil, "tune: no candidate was timed" end
  return 0
end

return M
