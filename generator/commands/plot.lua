--- attngen plot mask|weights: pictures drawn by gnuplot.
--   plot mask CONFIG --seq-q N --seq-k M [--seqlens L] -o F.svg|F.png
--     which keys each query row sees, by the reference's rules (a small C
--     tool built from the runtime and the reference prints the matrix), with
--     the kernel's prefill tiles over it: skipped, full or partial.
--   plot weights W.npy -o F [--head H | --average-heads] [--batch B] [--labels T]
--     a heatmap of attention weights ([B][H][Lq][Lk] or [B][Lq][Lk] f32).
--   plot entropy E1.npy [E2.npy ...] -o F [--head H] [--batch B]
--     the mean entropy of each file (a layer, [B][Hq][Lq] f32) and head as a
--     layers x heads heatmap, or one head's entropy per query row (a line).
local build = require("build")
local families = require("families")
local gnuplot = require("gnuplot")
local npy = require("npy")
local planner = require("planner")
local plots = require("plots")
local presets = require("presets")
local tunedb = require("tunedb")
local util = require("util")

local M = {}

M.MAX_CELLS = 4096 * 4096

function M.add_to_parser(parser)
  local c = parser:command("plot", "Draw pictures with gnuplot: a config's mask and tiles, attention weights "
    .. "or their entropy.")
  c:command_target("plot_kind")
  c:require_command(true)
  local m = c:command("mask", "The visibility pattern of CONFIG's mask rules at Lq x Lk, with the kernel's "
    .. "prefill tiles over it (skipped, full or partial). Run-time masks (mask = \"bool\"/\"bias\") are data, "
    .. "not rules, and are not drawn.")
  m:argument("config", "Config file or preset name.")
  m:option("--set", "Override a config key: key=value (a Lua literal); repeatable."):count("*")
  m:option("--seq-q", "Query rows."):argname("N"):count(1)
  m:option("--seq-k", "Keys."):argname("M"):count(1)
  m:option("--seqlens", "Valid keys (a config with padding): keys from L on are padding."):argname("L")
  m:option("-o --output", "The picture: .svg or .png."):argname("F"):count(1)
  m:option("--size", "Picture size in pixels (default 1000x820)."):argname("WxH")
  local w = c:command("weights", "A heatmap of attention weights from a .npy file: f32 [B][H][Lq][Lk] "
    .. "(as 'attngen run --weights' writes) or [B][Lq][Lk] (heads already averaged). One query row "
    .. "(Lq = 1) is drawn as a 1 x Lk strip.")
  w:argument("weights", "The weights, a .npy file."):argname("W.npy")
  w:option("-o --output", "The picture: .svg or .png."):argname("F"):count(1)
  w:mutex(
    w:option("--head", "The head to draw, 0-based (default: 0 when there is one head)."):argname("H"),
    w:flag("--average-heads", "Draw the mean over the heads.")
  )
  w:option("--batch", "The batch entry to draw, 0-based.", "0"):argname("B")
  w:option("--labels", "Token labels, one per line: their count must be Lk; the query rows take the last Lq "
    .. "labels (bottom-right alignment, as the kernels align positions)."):argname("tokens.txt")
  w:option("--size", "Picture size in pixels (default 900x800; 1000x300 for one query row)."):argname("WxH")
  local e = c:command("entropy", "Attention entropy from .npy files as 'attngen run --entropy' writes them "
    .. "(f32 [B][Hq][Lq], nats), one file a layer: a layers x heads heatmap of the mean over batch and rows, or "
    .. "with --head one head's entropy per query row of one file.")
  e:argument("entropy", "The entropy, .npy files, one a layer, in order."):argname("E.npy"):args("+")
  e:option("-o --output", "The picture: .svg or .png."):argname("F"):count(1)
  e:option("--head", "Draw this head's entropy per query row (one file), 0-based."):argname("H")
  e:option("--batch", "With --head: the batch entry to draw, 0-based.", "0"):argname("B")
  e:option("--size", "Picture size in pixels (default: from the cells; 900x450 with --head)."):argname("WxH")
end

--- An integer option in lo..hi; returns it or nil, err.
local function int_option(name, text, lo, hi)
  local n = tonumber(text)
  if not n or n ~= math.floor(n) or n < lo or n > hi then
    return nil, ("%s %s: must be an integer in %d..%d"):format(name, tostring(text), lo, hi)
  end
  return math.floor(n)
end

--- --size WxH, or the default.
local function size_option(text, dw, dh)
  if not text then return dw, dh end
  local a, b = text:match("^(%d+)[x,](%d+)$")
  a, b = tonumber(a), tonumber(b)
  if not a or a < 200 or b < 150 or a > 8000 or b > 8000 then
    return nil, ("--size %s: must be WxH with W in 200..8000 and H in 150..8000"):format(text)
  end
  return a, b
end

local function plot_mask(args)
  local fmt, ferr = gnuplot.check_output(args.output)
  if not fmt then return nil, ferr end
  local width, height = size_option(args.size, 1000, 820)
  if not width then return nil, height end
  local lq, qerr = int_option("--seq-q", args.seq_q, 1, 1048576)
  if not lq then return nil, qerr end
  local lk, kerr = int_option("--seq-k", args.seq_k, 1, 1048576)
  if not lk then return nil, kerr end
  if lq * lk > M.MAX_CELLS then
    return nil, ("--seq-q %d --seq-k %d: a picture of at most %d cells (4096 x 4096)"):format(lq, lk, M.MAX_CELLS)
  end
  local cfg, display = presets.load(args.config, args.set)
  if not cfg then return nil, display end
  local family = families.of(cfg)
  if family.unsupported.plot_mask then
    return nil, ("plot mask: %s is %s, %s"):format(display, family.noun, family.unsupported.plot_mask)
  end
  local lkb
  if args.seqlens then
    if not cfg.padding then
      return nil, ("--seqlens: %s has no padding (add --set padding=true)"):format(display)
    end
    local lerr
    lkb, lerr = int_option("--seqlens", args.seqlens, 0, lk)
    if not lkb then return nil, lerr end
  end
  local popts, perr = tunedb.plan_options(cfg)
  if not popts then return nil, perr end
  local plan = planner.plan(cfg, popts)
  local exe, berr = build.ensure_mask_tool(plan)
  if not exe then return nil, berr end
  local argv = { util.shell_quote(exe), tostring(lq), tostring(lk) }
  if lkb then argv[#argv + 1] = tostring(lkb) end
  local ok, out, rc = util.run_capture(table.concat(argv, " "))
  if not ok then
    return nil, ("the mask tool failed (exit code %s): %s"):format(tostring(rc), out:match("[^\n]*"))
  end
  local rows = {}
  for line in out:gmatch("([^\n]*)\n") do rows[#rows + 1] = line end
  local head = table.remove(rows, 1) or ""
  local hq, hk, hb = head:match("^attn_mask (%d+) (%d+) (%d+)$")
  if tonumber(hq) ~= lq or tonumber(hk) ~= lk or #rows ~= lq then
    return nil, "the mask tool printed an unexpected matrix: " .. head
  end
  hb = tonumber(hb)
  -- the title: what is drawn, the tiles, and what is not drawn
  local lines = {
    ("%s: keys each query row sees, Lq = %d, Lk = %d%s%s"):format(display, lq, lk,
      cfg.padding and (", seqlens_k = %d"):format(hb) or "",
      plan.top_left and " (causal top-left)" or ""),
  }
  local notes = { ("prefill tiles %d x %d (query rows x keys)"):format(plan.tile.q, plan.tile.kv) }
  if cfg.mask ~= "none" then notes[#notes + 1] = ("the run-time %s mask is data, not drawn"):format(cfg.mask) end
  if lq <= cfg.decode_max_q then notes[#notes + 1] = ("Lq <= decode_max_q = %d: the kernel takes the decode path")
    :format(cfg.decode_max_q) end
  lines[2] = table.concat(notes, "; ")
  local job = plots.mask({ rows = rows, lq = lq, lk = lk, padding = cfg.padding, tile = plan.tile,
    title = table.concat(lines, "\n"), width = width, height = height })
  local rok, rerr = gnuplot.render(args.output, job)
  if not rok then return nil, rerr end
  print("wrote " .. args.output)
  return 0
end

--- The labels file: one label per line (trailing empty line ignored).
local function read_labels(p)
  local text, err = util.read_file(p)
  if not text then return nil, ("--labels %s: cannot read: %s"):format(p, tostring(err)) end
  local labels = {}
  for line in (text:gsub("\r\n", "\n") .. (text:sub(-1) == "\n" and "" or "\n")):gmatch("([^\n]*)\n") do
    labels[#labels + 1] = line
  end
  return labels
end

local function plot_weights(args)
  local fmt, ferr = gnuplot.check_output(args.output)
  if not fmt then return nil, ferr end
  local a, rerr = npy.read_f32(args.weights)
  if not a then return nil, rerr end
  local shape = a.shape
  local st = npy.shape_text(shape)
  local nb, nh, lq, lk
  if #shape == 4 then nb, nh, lq, lk = shape[1], shape[2], shape[3], shape[4]
  elseif #shape == 3 then nb, nh, lq, lk = shape[1], nil, shape[2], shape[3]
  else
    return nil, ("%s: shape %s; the weights must be [B][H][Lq][Lk] or [B][Lq][Lk]"):format(args.weights, st)
  end
  if nb == 0 or lq == 0 or lk == 0 or nh == 0 then
    return nil, ("%s: shape %s is empty"):format(args.weights, st)
  end
  if lq * lk > M.MAX_CELLS then
    return nil, ("%s: shape %s; a picture of at most %d cells (4096 x 4096)"):format(args.weights, st, M.MAX_CELLS)
  end
  local b, berr = int_option("--batch", args.batch, 0, math.huge)
  if not b then return nil, berr end
  if b >= nb then
    return nil, ("--batch %d: %s has shape %s, batch entries 0..%d"):format(b, args.weights, st, nb - 1)
  end
  local heads -- the heads to average (one for --head)
  local what
  if nh then
    if args.average_heads then
      heads = {}
      for h = 0, nh - 1 do heads[#heads + 1] = h end
      what = ("mean of %d heads"):format(nh)
    else
      if args.head == nil and nh > 1 then
        return nil, ("%s has shape %s, %d heads: give --head H (0..%d) or --average-heads"):format(args.weights, st,
          nh, nh - 1)
      end
      local h, herr = int_option("--head", args.head or "0", 0, math.huge)
      if not h then return nil, herr end
      if h >= nh then
        return nil, ("--head %d: %s has shape %s, heads 0..%d"):format(h, args.weights, st, nh - 1)
      end
      heads, what = { h }, ("head %d of %d"):format(h, nh)
    end
  else
    if args.head or args.average_heads then
      return nil, ("%s: %s has shape %s ([B][Lq][Lk], heads already averaged)"):format(
        args.head and ("--head " .. args.head) or "--average-heads", args.weights, st)
    end
    heads, what = { 0 }, "heads averaged"
  end
  local xlabels, ylabels
  if args.labels then
    local labels, lerr = read_labels(args.labels)
    if not labels then return nil, lerr end
    if #labels ~= lk then
      return nil, ("--labels %s: %d labels, but the weights have Lk = %d keys (shape %s)"):format(args.labels,
        #labels, lk, st)
    end
    if lq > lk then
      return nil, ("--labels %s: Lq = %d query rows but Lk = %d keys (shape %s); the labels name keys")
        :format(args.labels, lq, lk, st)
    end
    xlabels, ylabels = labels, {}
    for i = lk - lq + 1, lk do ylabels[#ylabels + 1] = labels[i] end
  end
  local width, height = size_option(args.size, lq == 1 and 1000 or 900, lq == 1 and 300 or 800)
  if not width then return nil, height end
  -- the values of the picture, row-major Lq x Lk
  local values = {}
  local per_head = lq * lk
  for i = 0, per_head - 1 do
    local sum = 0
    for _, h in ipairs(heads) do
      sum = sum + npy.at(a, (b * (nh or 1) + h) * per_head + i)
    end
    values[i + 1] = sum / #heads
  end
  local job = plots.weights({ values = values, lq = lq, lk = lk, xlabels = xlabels, ylabels = ylabels,
    title = ("%s: attention weights, batch %d, %s (Lq = %d, Lk = %d)"):format(args.weights, b, what, lq, lk),
    width = width, height = height })
  local ok, err = gnuplot.render(args.output, job)
  if not ok then return nil, err end
  print("wrote " .. args.output)
  return 0
end

--- The entropy files: each read, [B][Hq][Lq] with the first one's Hq.
local function read_entropy(paths)
  local files = {}
  for k, p in ipairs(paths) do
    local a, rerr = npy.read_f32(p)
    if not a then return nil, rerr end
    local st = npy.shape_text(a.shape)
    if #a.shape ~= 3 then
      return nil, ("%s: shape %s; the entropy must be [B][Hq][Lq] (as 'attngen run --entropy' writes it)")
        :format(p, st)
    end
    if a.shape[1] == 0 or a.shape[2] == 0 or a.shape[3] == 0 then
      return nil, ("%s: shape %s is empty"):format(p, st)
    end
    if k > 1 and a.shape[2] ~= files[1].shape[2] then
      return nil, ("%s: shape %s has %d heads, %s has %d"):format(p, st, a.shape[2], paths[1], files[1].shape[2])
    end
    files[k] = a
  end
  return files
end

local function plot_entropy(args)
  local fmt, ferr = gnuplot.check_output(args.output)
  if not fmt then return nil, ferr end
  local files, rerr = read_entropy(args.entropy)
  if not files then return nil, rerr end
  local nh = files[1].shape[2]
  local job
  if args.head then
    if #files > 1 then
      return nil, ("--head %s: draws one file's rows; %d files given"):format(args.head, #files)
    end
    local a, p = files[1], args.entropy[1]
    local h, herr = int_option("--head", args.head, 0, math.huge)
    if not h then return nil, herr end
    if h >= nh then return nil, ("--head %d: %s has %d heads, 0..%d"):format(h, p, nh, nh - 1) end
    local b, berr = int_option("--batch", args.batch, 0, math.huge)
    if not b then return nil, berr end
    if b >= a.shape[1] then
      return nil, ("--batch %d: %s has batch entries 0..%d"):format(b, p, a.shape[1] - 1)
    end
    local width, height = size_option(args.size, 900, 450)
    if not width then return nil, height end
    local lq, points = a.shape[3], {}
    for i = 0, lq - 1 do points[#points + 1] = { i, npy.at(a, (b * nh + h) * lq + i) } end
    job = plots.lines({ title = ("%s: attention entropy of head %d, batch %d, per query row"):format(p, h, b),
      xlabel = "query row", ylabel = "entropy (nats)", series = { { name = ("head %d"):format(h), points = points } },
      auto_xtics = lq > 24, width = width, height = height })
  else
    if args.size then return nil, "--size: only with --head (the heatmap's size follows its cells)" end
    local rows, values, cols = {}, {}, {}
    for h = 1, nh do cols[h] = tostring(h - 1) end
    for k, a in ipairs(files) do
      local nb, lq = a.shape[1], a.shape[3]
      rows[k], values[k] = ("%d: %s"):format(k - 1, args.entropy[k]:match("[^/\\]*$")), {}
      for h = 0, nh - 1 do
        local sum = 0
        for b = 0, nb - 1 do
          for i = 0, lq - 1 do sum = sum + npy.at(a, (b * nh + h) * lq + i) end
        end
        values[k][h + 1] = sum / (nb * lq)
      end
    end
    job = plots.heatmap({ title = "attention entropy (nats): mean over batch and query rows",
      panels = { { title = "layer x head", xlabel = "head", ylabel = "layer", rows = rows, cols = cols,
        values = values, format = "%.2f" } } })
  end
  local ok, err = gnuplot.render(args.output, job)
  if not ok then return nil, err end
  print("wrote " .. args.output)
  return 0
end

function M.run(args)
  if args.plot_kind == "mask" then return plot_mask(args) end
  if args.plot_kind == "entropy" then return plot_entropy(args) end
  return plot_weights(args)
end

return M
