--- The pictures attngen draws, as gnuplot jobs (gnuplot.render draws them):
-- a config's mask with the prefill tiles (plot mask), a heatmap of
-- attention weights (plot weights), lines against sequence length (the
-- bench suite) and heatmap panels (tune --plot).  Each builder returns
-- { width, height, script, data }; the layout is fixed in pixels, so the
-- tests can find a cell's pixel (M.cell_pixel).
local gnuplot = require("gnuplot")

local M = {}

local q = gnuplot.quote

--- A gnuplot double-quoted string (for titles of several lines: "\n").
local function dq(s)
  return '"' .. tostring(s):gsub("\\", "\\\\"):gsub('"', '\\"'):gsub("\n", "\\n") .. '"'
end

local function unpack_rgb(t) return t[1], t[2], t[3] end
local function hex(c) return ("#%02x%02x%02x"):format(c[1], c[2], c[3]) end

-- ---- plot mask --------------------------------------------------------------

M.MASK_COLORS = { visible = { 49, 104, 170 }, gathered = { 140, 190, 230 }, hidden = { 238, 238, 238 },
  padding = { 240, 180, 60 } }
M.TILE_STYLES = {
  { class = "skipped", color = "#7f7f7f", lw = 1.5, dt = 2, title = "skipped tile (no visible key)" },
  { class = "full", color = "#1b9e3e", lw = 2.5, dt = 1, title = "full tile (no mask test)" },
  { class = "partial", color = "#d62728", lw = 2.5, dt = 1, title = "partial tile (masked per key)" },
}

--- The plot area of a mask picture, in pixels from the top-left corner.
function M.mask_area(width, height)
  return { x0 = 80, y0 = 70, x1 = width - 300, y1 = height - 60 }
end

--- The pixel (x, y from the top-left) at the centre of cell (row i, key j)
-- of an nr x nc matrix drawn in area.
function M.cell_pixel(area, nr, nc, i, j)
  return math.floor(area.x0 + (j + 0.5) / nc * (area.x1 - area.x0)),
    math.floor(area.y0 + (i + 0.5) / nr * (area.y1 - area.y0))
end

--- Classifies the prefill tiles of a visibility matrix (rows: strings of
-- '1' visible, '0' hidden, 'p' padding, 's' visible on a sparse pattern's
-- gathered panel, not on the tiles): a list of { i0, i1, j0, j1, class }
-- (half-open) and counts by class.
function M.classify_tiles(rows, lq, lk, tq, tk)
  local tiles, counts = {}, { skipped = 0, full = 0, partial = 0 }
  for i0 = 0, lq - 1, tq do
    local i1 = math.min(i0 + tq, lq)
    for j0 = 0, lk - 1, tk do
      local j1 = math.min(j0 + tk, lk)
      local seen = 0
      for i = i0 + 1, i1 do
        seen = seen + select(2, rows[i]:sub(j0 + 1, j1):gsub("1", ""))
      end
      local class = seen == 0 and "skipped" or (seen == (i1 - i0) * (j1 - j0) and "full" or "partial")
      counts[class] = counts[class] + 1
      tiles[#tiles + 1] = { i0 = i0, i1 = i1, j0 = j0, j1 = j1, class = class }
    end
  end
  return tiles, counts
end

--- m: { rows, lq, lk, padding (bool), tile = {q, kv}, title (may hold "\n"), width, height }
function M.mask(m)
  local c = M.MASK_COLORS
  local bytes = { ["1"] = string.char(unpack_rgb(c.visible)), ["0"] = string.char(unpack_rgb(c.hidden)),
    p = string.char(unpack_rgb(c.padding)), s = string.char(unpack_rgb(c.gathered)) }
  local data, gathered = {}, false
  for i = 1, m.lq do
    data[i] = m.rows[i]:gsub(".", bytes)
    gathered = gathered or m.rows[i]:find("s", 1, true) ~= nil
  end
  local tiles, counts = M.classify_tiles(m.rows, m.lq, m.lk, m.tile.q, m.tile.kv)
  local area = M.mask_area(m.width, m.height)
  local s = {
    "set title " .. dq(m.title),
    gnuplot.margins(m.width, m.height, area),
    ("set xrange [-0.5:%g]"):format(m.lk - 0.5),
    ("set yrange [%g:-0.5]"):format(m.lq - 0.5),
    "set xlabel 'key j'", "set ylabel 'query row i'",
    "set tics out nomirror", "unset colorbox",
    ("set key at screen %.6f, screen %.6f left top Left reverse samplen 3 width 2 spacing 1.3")
      :format((area.x1 + 20) / m.width, 1 - area.y0 / m.height),
  }
  -- each tile's border inset by 2 pixels, so that neighbours' borders stay apart
  local ix = 2 * m.lk / (area.x1 - area.x0)
  local iy = 2 * m.lq / (area.y1 - area.y0)
  local n = 0
  for _, style in ipairs(M.TILE_STYLES) do
    for _, t in ipairs(tiles) do
      if t.class == style.class then
        n = n + 1
        s[#s + 1] = ("set object %d rect from %g,%g to %g,%g front fillstyle empty border lc rgb '%s' lw %g dt %d")
          :format(n, t.j0 - 0.5 + ix, t.i0 - 0.5 + iy, t.j1 - 0.5 - ix, t.i1 - 0.5 - iy, style.color, style.lw,
            style.dt)
      end
    end
  end
  local plot = { ("DATA(mask.rgb) binary array=(%d,%d) format='%%uchar%%uchar%%uchar' with rgbimage notitle")
    :format(m.lk, m.lq) }
  local function entry(color, title)
    plot[#plot + 1] = ("keyentry with boxes fillstyle solid 1.0 border lc rgb '#555555' fc rgb '%s' title %s")
      :format(color, q(title))
  end
  entry(hex(c.visible), "visible")
  if gathered then entry(hex(c.gathered), "visible, on a gathered panel (sparse)") end
  entry(hex(c.hidden), "hidden")
  if m.padding then entry(hex(c.padding), "padding (key >= seqlens_k)") end
  for _, style in ipairs(M.TILE_STYLES) do
    plot[#plot + 1] = ("keyentry with lines lc rgb '%s' lw %g dt %d title %s"):format(style.color, style.lw, style.dt,
      q(("%s: %d"):format(style.title, counts[style.class])))
  end
  s[#s + 1] = "plot " .. table.concat(plot, ", \\\n  ")
  return { width = m.width, height = m.height, script = table.concat(s, "\n"),
    data = { ["mask.rgb"] = table.concat(data) } }, counts
end

-- ---- plot weights -------------------------------------------------------------

M.PALETTE = { "#440154", "#3b528b", "#21918c", "#5ec962", "#fde725" } -- viridis, low to high

local function palette()
  local parts = {}
  for i, col in ipairs(M.PALETTE) do parts[i] = ("%g '%s'"):format((i - 1) / (#M.PALETTE - 1), col) end
  return "set palette defined (" .. table.concat(parts, ", ") .. ")"
end

local function maxlen(labels)
  local n = 0
  for _, l in ipairs(labels or {}) do n = math.max(n, #l) end
  return n
end

--- The plot area of a weights picture (labels widen the margins).
function M.weights_area(width, height, xlabels, ylabels)
  local left = 70 + math.min(7 * maxlen(ylabels), 200)
  local bottom = 55 + math.min(7 * maxlen(xlabels), 200)
  return { x0 = left, y0 = 60, x1 = width - 110, y1 = height - bottom }
end

--- w: { values (row-major lq x lk), lq, lk, xlabels, ylabels (or nil), title, width, height }
function M.weights(w)
  local vmin, vmax = math.huge, -math.huge
  local lines = {}
  for i = 0, w.lq - 1 do
    local row = {}
    for j = 0, w.lk - 1 do
      local v = w.values[i * w.lk + j + 1]
      if v ~= v or v == math.huge or v == -math.huge then
        row[#row + 1] = "NaN"
      else
        vmin, vmax = math.min(vmin, v), math.max(vmax, v)
        row[#row + 1] = ("%.9g"):format(v)
      end
    end
    lines[#lines + 1] = table.concat(row, " ")
  end
  if vmin > vmax then vmin, vmax = 0, 1 end
  if vmax == vmin then vmax = vmin + 1 end
  -- gnuplot sizes an image's pixels from their neighbours: one row is
  -- written twice, and the copy lies outside the y range
  if w.lq == 1 then lines[2] = lines[1] end
  local area = M.weights_area(w.width, w.height, w.xlabels, w.ylabels)
  local s = {
    "set title " .. dq(w.title),
    gnuplot.margins(w.width, w.height, area),
    ("set xrange [-0.5:%g]"):format(w.lk - 0.5),
    ("set yrange [%g:-0.5]"):format(w.lq - 0.5),
    ("set cbrange [%.9g:%.9g]"):format(vmin, vmax),
    palette(), "set tics out nomirror", "set cblabel 'weight'", "unset key",
    "set xlabel 'key'", "set ylabel " .. q(w.lq == 1 and "" or "query"),
  }
  local function tics(axis, labels, offset, extra)
    local parts = {}
    for k, l in ipairs(labels) do parts[k] = ("%s %d"):format(q(l), k - 1 - offset) end
    s[#s + 1] = ("set %stics (%s)%s"):format(axis, table.concat(parts, ", "), extra or "")
  end
  if w.xlabels then tics("x", w.xlabels, 0, " rotate by 90 right") end
  if w.ylabels then
    tics("y", w.ylabels, 0)
  elseif w.lq == 1 then
    s[#s + 1] = "set ytics ('query' 0)"
  end
  s[#s + 1] = "plot DATA(weights.txt) matrix with image notitle"
  return { width = w.width, height = w.height, script = table.concat(s, "\n"),
    data = { ["weights.txt"] = table.concat(lines, "\n") .. "\n" } }
end

-- ---- lines (the bench suite) ------------------------------------------------------

M.COLORS = { "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf" }

--- spec: { title, xlabel, ylabel, logx, series = { {name, points = {{x, y}, ...}} }, hline = {value, label},
-- auto_xtics (gnuplot's tics instead of one at every x: many points) }
function M.lines(spec)
  local width, height = spec.width or 720, spec.height or 440
  local s = {
    "set title " .. q(spec.title or ""), "set xlabel " .. q(spec.xlabel or ""), "set ylabel " .. q(spec.ylabel or ""),
    gnuplot.margins(width, height, { x0 = 70, y0 = 40, x1 = width - 190, y1 = height - 55 }),
    ("set key at screen %.6f, screen %.6f left top Left reverse samplen 3 width 2"):format((width - 175) / width,
      1 - 40 / height),
    "set grid ytics lc rgb '#dddddd'", "set tics out nomirror",
    "set yrange [0:*]",
  }
  local xs, seen = {}, {}
  local data, plot = {}, {}
  for k, ser in ipairs(spec.series) do
    local rows = {}
    for _, p in ipairs(ser.points) do
      rows[#rows + 1] = ("%.9g %.9g"):format(p[1], p[2])
      if not seen[p[1]] then seen[p[1]] = true; xs[#xs + 1] = p[1] end
    end
    local name = ("series%d.txt"):format(k)
    data[name] = table.concat(rows, "\n") .. "\n"
    plot[#plot + 1] = ("DATA(%s) using 1:2 with linespoints lw 2 pt 7 ps 0.8 lc rgb '%s' title %s")
      :format(name, M.COLORS[(k - 1) % #M.COLORS + 1], q(ser.name))
  end
  table.sort(xs)
  if spec.logx then s[#s + 1] = "set logscale x 2" end
  if #xs > 0 then
    local t = {}
    for k, x in ipairs(xs) do t[k] = ("'%g' %.9g"):format(x, x) end
    if not spec.auto_xtics then s[#s + 1] = "set xtics (" .. table.concat(t, ", ") .. ")" end
    local lo, hi = xs[1], xs[#xs]
    if lo == hi then lo, hi = lo * 0.5, hi * 2 end
    if spec.logx then lo, hi = lo / 1.1, hi * 1.1 else lo, hi = lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo) end
    s[#s + 1] = ("set xrange [%.9g:%.9g]"):format(lo, hi)
  end
  if spec.hline then
    plot[#plot + 1] = ("%.9g with lines dt 2 lw 1.5 lc rgb '#000000' title %s"):format(spec.hline.value,
      q(spec.hline.label or ""))
  end
  if #plot == 0 then plot[1] = "NaN notitle" end
  s[#s + 1] = "plot " .. table.concat(plot, ", \\\n  ")
  return { width = width, height = height, script = table.concat(s, "\n"), data = data }
end

-- ---- heatmap panels (tune --plot) ------------------------------------------------

M.MARK_COLOR = "#d62728"

--- spec: { title, subtitle, panels = { { title, xlabel, ylabel, rows = {labels}, cols = {labels},
--   values = { [row] = { [col] = number or nil } }, mark = {row, col} or nil, format = the cells'
--   format (default "%.1f", "%.0f" from 100) } } }
-- Each panel has its own colour scale; cells show their value, cells
-- without one stay grey, the marked cell is outlined.
function M.heatmap(spec)
  local CW, CH, PL, PR, PT, PB = 48, 24, 80, 130, 60, 50
  local top0 = spec.subtitle and 60 or 44
  local width = math.max(560, 20 + 7.5 * #(spec.title or ""), 20 + 6.5 * #(spec.subtitle or ""))
  local height = top0
  for _, p in ipairs(spec.panels) do
    width = math.max(width, PL + #p.cols * CW + PR)
    height = height + PT + math.max(#p.rows, 1) * CH + PB
  end
  width, height = math.floor(width), math.floor(height)
  local s = { "set multiplot",
    ("set label 1 %s at screen %g, screen %g left font ',14'"):format(q(spec.title or ""), 10 / width,
      1 - 22 / height) }
  if spec.subtitle then
    s[#s + 1] = ("set label 2 %s at screen %g, screen %g left"):format(q(spec.subtitle), 10 / width, 1 - 42 / height)
  end
  s[#s + 1] = palette()
  s[#s + 1] = "set tics out nomirror scale 0.5"
  s[#s + 1] = "unset key"
  local data = {}
  local y = top0
  for k, p in ipairs(spec.panels) do
    local nr, nc = math.max(#p.rows, 1), math.max(#p.cols, 1)
    local box = { x0 = PL, y0 = y + PT, x1 = PL + nc * CW, y1 = y + PT + nr * CH }
    local vmin, vmax = math.huge, -math.huge
    local mat, labels = {}, {}
    for r = 1, nr do
      local row = {}
      for c = 1, nc do
        local v = p.values[r] and p.values[r][c]
        if v then
          vmin, vmax = math.min(vmin, v), math.max(vmax, v)
          row[c] = ("%.9g"):format(v)
        else
          row[c] = "NaN"
        end
      end
      if nc == 1 then row[2] = row[1] end
      mat[r] = table.concat(row, " ")
    end
    if nr == 1 then mat[2] = mat[1] end
    local lo, hi = vmin, vmax
    if lo > hi then lo, hi = 0, 1 end
    if hi == lo then hi = lo + 1 end
    for r = 1, nr do
      for c = 1, nc do
        local v = p.values[r] and p.values[r][c]
        if v then
          local light = (v - lo) / (hi - lo) > 0.6 -- the palette's light end: dark text
          local f = p.format or (v < 100 and "%.1f" or "%.0f")
          labels[#labels + 1] = ("%d %d \"%s\" %d"):format(c - 1, r - 1, f:format(v),
            light and 0 or 16777215)
        end
      end
    end
    if #labels == 0 then labels[1] = "0 0 \"\" 0" end
    data[("panel%d.txt"):format(k)] = table.concat(mat, "\n") .. "\n"
    data[("labels%d.txt"):format(k)] = table.concat(labels, "\n") .. "\n"
    local function tics(axis, names)
      local t = {}
      for i, n in ipairs(names) do t[i] = ("%s %d"):format(q(tostring(n)), i - 1) end
      return ("set %stics (%s)"):format(axis, table.concat(t, ", "))
    end
    s[#s + 1] = gnuplot.margins(width, height, box)
    s[#s + 1] = ("set label %d %s at screen %g, screen %g left"):format(2 + k, q((p.title or "") .. (vmax >= vmin
      and ("   (colour: %.1f dark to %.1f light)"):format(vmin, vmax) or "")), 10 / width, 1 - (y + 22) / height)
    s[#s + 1] = "set xlabel " .. q(p.xlabel or "") .. " offset 0,0.5"
    s[#s + 1] = "set ylabel " .. q(p.ylabel or "")
    s[#s + 1] = ("set xrange [-0.5:%g]"):format(nc - 0.5)
    s[#s + 1] = ("set yrange [%g:-0.5]"):format(nr - 0.5)
    s[#s + 1] = ("set cbrange [%.9g:%.9g]"):format(lo, hi)
    s[#s + 1] = tics("x", p.cols)
    s[#s + 1] = tics("y", p.rows)
    s[#s + 1] = "unset colorbox"
    s[#s + 1] = "unset object"
    s[#s + 1] = "set object 1 rect from graph 0, graph 0 to graph 1, graph 1 behind fillcolor rgb '#eeeeee' "
      .. "fillstyle solid noborder"
    if p.mark then
      s[#s + 1] = ("set object 2 rect from %g,%g to %g,%g front fillstyle empty border lc rgb '%s' lw 3")
        :format(p.mark[2] - 1.5, p.mark[1] - 1.5, p.mark[2] - 0.5, p.mark[1] - 0.5, M.MARK_COLOR)
    end
    s[#s + 1] = ("plot DATA(panel%d.txt) matrix with image, DATA(labels%d.txt) using 1:2:3:4 with labels "
      .. "font ',9' tc rgb variable"):format(k, k)
    s[#s + 1] = "unset label"
    y = box.y1 + PB
  end
  s[#s + 1] = "unset multiplot"
  return { width = width, height = height, script = table.concat(s, "\n"), data = data }
end

return M
