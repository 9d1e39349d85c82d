--- Attention rollout (Abnar and Zuidema, 2020): how much each input token
-- reaches each position through the layers, from each layer's attention
-- weights [B][H][L][L] (or [B][L][L], heads already combined).
--
-- Per batch entry and layer: the heads combined (mean or max) into A; the
-- residual connection mixed in, A~ = r I + (1 - r) A, and each row divided
-- by its sum (a row of max-combined weights no longer sums to 1); then
-- R = A~_L ... A~_1, the first layer's matrix applied first.  Sums in
-- double; the result is written as float32.
local npy = require("npy")

local M = {}

M.HEADS = { mean = true, max = true }

--- One layer's combined, residual-mixed, row-normalized matrix of batch
-- entry b: a flat array of L * L doubles (row-major, 1-based).
function M.layer_matrix(a, b, nh, L, heads, residual)
  local per_head = L * L
  local base = b * (nh or 1) * per_head
  local m = {}
  for i = 0, L - 1 do
    local row, sum = {}, 0
    for j = 0, L - 1 do
      local v
      if not nh then v = npy.at(a, base + i * L + j)
      else
        v = heads == "max" and -math.huge or 0
        for h = 0, nh - 1 do
          local w = npy.at(a, base + h * per_head + i * L + j)
          if heads == "max" then v = math.max(v, w) else v = v + w end
        end
        if heads == "mean" then v = v / nh end
      end
      v = (1 - residual) * v + (i == j and residual or 0)
      row[j] = v
      sum = sum + v
    end
    for j = 0, L - 1 do m[i * L + j + 1] = sum ~= 0 and row[j] / sum or 0 end
  end
  return m
end

--- C = A B for L x L flat arrays (i-k-j order: rows of B read in turn).
function M.matmul(a, b, L)
  local c = {}
  for i = 0, L * L - 1 do c[i + 1] = 0 end
  for i = 0, L - 1 do
    local ci = i * L
    for k = 0, L - 1 do
      local aik = a[ci + k + 1]
      if aik ~= 0 then
        local bk = k * L
        for j = 1, L do c[ci + j] = c[ci + j] + aik * b[bk + j] end
      end
    end
  end
  return c
end

--- The shape every layer must share: B, heads (nil for [B][L][L]), L; or
-- nil and a one-line error.
local function layer_shape(a, path)
  local s = a.shape
  if (#s ~= 3 and #s ~= 4) or s[#s] ~= s[#s - 1] or s[#s] == 0 then
    return nil, ("%s: shape %s is not [B][H][L][L] or [B][L][L] (square, self-attention)"):format(path,
      npy.shape_text(s))
  end
  return { b = s[1], h = #s == 4 and s[2] or nil, l = s[#s] }
end

--- Reads the layers' files in order; returns the arrays and their shape,
-- or nil and a one-line error.
function M.read_layers(paths)
  local layers, shape = {}, nil
  for _, p in ipairs(paths) do
    local a, err = npy.read_f32(p)
    if not a then return nil, err end
    local s, serr = layer_shape(a, p)
    if not s then return nil, serr end
    if shape and (s.b ~= shape.b or s.h ~= shape.h or s.l ~= shape.l) then
      return nil, ("%s: shape %s differs from %s's %s"):format(p, npy.shape_text(a.shape), paths[1],
        npy.shape_text(layers[1].shape))
    end
    shape = shape or s
    layers[#layers + 1] = a
  end
  return layers, shape
end

--- The rollout of every batch entry: a flat array of B * L * L values
-- (C order, [B][L][L]).
function M.rollout(layers, shape, heads, residual)
  local out, L = {}, shape.l
  for b = 0, shape.b - 1 do
    local r = M.layer_matrix(layers[1], b, shape.h, L, heads, residual)
    for n = 2, #layers do
      r = M.matmul(M.layer_matrix(layers[n], b, shape.h, L, heads, residual), r, L)
    end
    for k = 1, L * L do out[b * L * L + k] = r[k] end
  end
  return out
end

return M
