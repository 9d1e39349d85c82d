--- Minimal SVG charts with no dependency: line charts (bench) and heatmaps
-- (tune).  Deterministic output for the same data.
local M = {}

local W, H = 720, 440
local ML, MR, MT, MB = 70, 170, 40, 55 -- margins: the legend sits on the right
local COLORS = { "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf" }

local function esc(s) return (tostring(s):gsub("&", "&amp;"):gsub("<", "&lt;"):gsub(">", "&gt;")) end
local function fmt(x) return ("%.1f"):format(x) end

--- A "nice" upper bound and tick step for [0, vmax].
local function ticks(vmax)
  if vmax <= 0 then return 1, 0.2 end
  local e = 10 ^ math.floor(math.log(vmax) / math.log(10))
  for _, m in ipairs({ 1, 2, 2.5, 5, 10 }) do
    if vmax <= m * e then return m * e, m * e / 5 end
  end
  return 10 * e, 2 * e
end

--- spec: { title, xlabel, ylabel, logx, series = { {name, points = {{x, y}, ...}} }, hline = {value, label} }
function M.lines(spec)
  local out = {}
  local function add(...) out[#out + 1] = table.concat({ ... }) end
  local xmin, xmax, ymax = math.huge, -math.huge, 0
  for _, s in ipairs(spec.series) do
    for _, p in ipairs(s.points) do
      xmin, xmax, ymax = math.min(xmin, p[1]), math.max(xmax, p[1]), math.max(ymax, p[2])
    end
  end
  if spec.hline then ymax = math.max(ymax, spec.hline.value) end
  local ytop, ystep = ticks(ymax * 1.05)
  local f = spec.logx and math.log or function(v) return v end
  local fmin, fmax = f(xmin), f(xmax)
  local function tx(x)
    local r = (fmax > fmin) and (f(x) - fmin) / (fmax - fmin) or 0.5
    return ML + r * (W - ML - MR)
  end
  local function ty(y) return H - MB - y / ytop * (H - MT - MB) end
  add(('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">')
    :format(W, H))
  add(('<rect width="%d" height="%d" fill="white"/>'):format(W, H))
  add(('<text x="%d" y="22" font-size="15">%s</text>'):format(ML, esc(spec.title or "")))
  -- axes and grid
  local y = 0
  while y <= ytop + 1e-9 do
    add(('<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#ddd"/>'):format(ML, fmt(ty(y)), W - MR, fmt(ty(y))))
    add(('<text x="%d" y="%s" text-anchor="end">%g</text>'):format(ML - 6, fmt(ty(y) + 4), y))
    y = y + ystep
  end
  local xs, seen = {}, {}
  for _, s in ipairs(spec.series) do
    for _, p in ipairs(s.points) do
      if not seen[p[1]] then seen[p[1]] = true; xs[#xs + 1] = p[1] end
    end
  end
  table.sort(xs)
  for _, x in ipairs(xs) do
    add(('<text x="%s" y="%d" text-anchor="middle">%g</text>'):format(fmt(tx(x)), H - MB + 18, x))
  end
  add(('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>'):format(ML, H - MB, W - MR, H - MB))
  add(('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>'):format(ML, MT, ML, H - MB))
  add(('<text x="%d" y="%d" text-anchor="middle">%s</text>'):format((ML + W - MR) / 2, H - 12, esc(spec.xlabel or "")))
  add(('<text x="16" y="%d" transform="rotate(-90 16 %d)" text-anchor="middle">%s</text>')
    :format((MT + H - MB) / 2, (MT + H - MB) / 2, esc(spec.ylabel or "")))
  -- the peak
  if spec.hline then
    local yy = fmt(ty(spec.hline.value))
    add(('<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="black" stroke-dasharray="6,4"/>'):format(ML, yy, W - MR, yy))
    add(('<text x="%d" y="%s">%s</text>'):format(W - MR + 6, yy, esc(spec.hline.label or "")))
  end
  -- series and legend
  for i, s in ipairs(spec.series) do
    local c = COLORS[(i - 1) % #COLORS + 1]
    local pts = {}
    for _, p in ipairs(s.points) do pts[#pts + 1] = fmt(tx(p[1])) .. "," .. fmt(ty(p[2])) end
    add(('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'):format(c, table.concat(pts, " ")))
    for _, p in ipairs(s.points) do
      add(('<circle cx="%s" cy="%s" r="3" fill="%s"/>'):format(fmt(tx(p[1])), fmt(ty(p[2])), c))
    end
    local ly = MT + 20 + (i - 1) * 18
    add(('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>')
      :format(W - MR + 6, ly, W - MR + 26, ly, c))
    add(('<text x="%d" y="%d">%s</text>'):format(W - MR + 30, ly + 4, esc(s.name)))
  end
  add("</svg>")
  return table.concat(out, "\n") .. "\n"
end

-- viridis at five stops, for the heatmap's colour scale
local VIRIDIS = { { 68, 1, 84 }, { 59, 82, 139 }, { 33, 145, 140 }, { 94, 201, 98 }, { 253, 231, 37 } }

local function viridis(r)
  r = math.max(0, math.min(1, r)) * (#VIRIDIS - 1)
  local i = math.min(math.floor(r), #VIRIDIS - 2)
  local f = r - i
  local a, b = VIRIDIS[i + 1], VIRIDIS[i + 2]
  local c = {}
  for k = 1, 3 do c[k] = math.floor(a[k] + f * (b[k] - a[k]) + 0.5) end
  return ("#%02x%02x%02x"):format(c[1], c[2], c[3]), (0.299 * c[1] + 0.587 * c[2] + 0.114 * c[3]) > 140
end

--- Heatmaps, one panel under the other.
-- spec: { title, subtitle, panels = { { title, xlabel, ylabel, rows = {labels}, cols = {labels},
--   values = { [row] = { [col] = number or nil } }, mark = {row, col} or nil } } }
-- Each panel has its own colour scale (its minimum to its maximum); cells show
-- their value, cells without one stay blank, the marked cell is outlined.
function M.heatmap(spec)
  local out = {}
  local function add(...) out[#out + 1] = table.concat({ ... }) end
  local CW, CH, PL, PT, PB, GAP = 40, 20, 70, 46, 40, 16
  local top0 = spec.subtitle and MT + 16 or MT
  -- wide enough for the titles (about 7 px per character at 12-14 px)
  local width = math.max(480, 20 + 7.5 * #(spec.title or ""), 20 + 6.5 * #(spec.subtitle or ""))
  local height = top0
  for _, p in ipairs(spec.panels) do
    width = math.max(width, PL + #p.cols * CW + 20)
    height = height + PT + #p.rows * CH + PB + GAP
  end
  width = math.floor(width)
  add(('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">')
    :format(width, height))
  add(('<rect width="%d" height="%d" fill="white"/>'):format(width, height))
  add(('<text x="10" y="22" font-size="14">%s</text>'):format(esc(spec.title or "")))
  if spec.subtitle then add(('<text x="10" y="40">%s</text>'):format(esc(spec.subtitle))) end
  local y0 = top0
  for _, p in ipairs(spec.panels) do
    local vmin, vmax = math.huge, -math.huge
    for r = 1, #p.rows do
      for c = 1, #p.cols do
        local v = p.values[r] and p.values[r][c]
        if v then vmin, vmax = math.min(vmin, v), math.max(vmax, v) end
      end
    end
    local top = y0 + PT
    add(('<text x="%d" y="%d" font-size="13">%s</text>'):format(PL, y0 + 16, esc(p.title or "")))
    if vmax >= vmin then
      add(('<text x="%d" y="%d" font-size="10">colour: %.1f (dark) to %.1f (light)</text>')
        :format(PL, y0 + 30, vmin, vmax))
    end
    for c, label in ipairs(p.cols) do
      add(('<text x="%d" y="%d" text-anchor="middle" font-size="10">%s</text>')
        :format(PL + (c - 0.5) * CW, top - 4, esc(label)))
    end
    for r, label in ipairs(p.rows) do
      local y = top + (r - 1) * CH
      add(('<text x="%d" y="%d" text-anchor="end" font-size="10">%s</text>'):format(PL - 4, y + 14, esc(label)))
      for c = 1, #p.cols do
        local v = p.values[r] and p.values[r][c]
        local x = PL + (c - 1) * CW
        if v then
          local color, light = viridis(vmax > vmin and (v - vmin) / (vmax - vmin) or 1)
          add(('<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>'):format(x, y, CW, CH, color))
          add(('<text x="%d" y="%d" text-anchor="middle" font-size="9" fill="%s">%s</text>')
            :format(x + CW / 2, y + 14, light and "black" or "white", (v < 100 and "%.1f" or "%.0f"):format(v)))
        else
          add(('<rect x="%d" y="%d" width="%d" height="%d" fill="#eee"/>'):format(x, y, CW, CH))
        end
      end
    end
    if p.mark then
      add(('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#d62728" stroke-width="3"/>')
        :format(PL + (p.mark[2] - 1) * CW, top + (p.mark[1] - 1) * CH, CW, CH))
    end
    local bottom = top + #p.rows * CH
    add(('<text x="%d" y="%d" text-anchor="middle">%s</text>'):format(PL + #p.cols * CW / 2, bottom + 18,
      esc(p.xlabel or "")))
    add(('<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>')
      :format(top + #p.rows * CH / 2, top + #p.rows * CH / 2, esc(p.ylabel or "")))
    y0 = bottom + PB + GAP
  end
  add("</svg>")
  return table.concat(out, "\n") .. "\n"
end

return M
