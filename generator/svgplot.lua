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

return M
