--- What a multi-head attention block costs: the parameters of its Q, K, V
-- and O projections, the KV cache's bytes per token, and the FLOPs of one
-- token (`attngen info`).  Pure functions of a validated config's heads and
-- head dims; nothing here builds or runs a kernel.
--
-- The projections of a block of width d_model with Hq query heads and Hkv
-- kv heads (head dims D for Q and K, Dv for V):
--   Q: d_model x Hq D,  K: d_model x Hkv D,  V: d_model x Hkv Dv,  O: Hq Dv x d_model,
-- each with a bias of its output width.  At d_model 512 with 8 heads of 64
-- that is 1,050,624 parameters (MHA), 590,976 (MQA, one kv head) and 787,968
-- (GQA, 4 kv heads).
local families = require("families")

local M = {}

--- Bytes of one stored value, by storage type; the block formats hold 32
-- values in 34 (q8_0) or 18 (q4_0) bytes and need head dims divisible by 32.
M.STORAGE = {
  { name = "f32", bytes = 4 },
  { name = "bf16", bytes = 2 },
  { name = "f16", bytes = 2 },
  { name = "q8_0", bytes = 34 / 32, block = 32 },
  { name = "q4_0", bytes = 18 / 32, block = 32 },
}

--- The shape info needs from a config, or nil and why it has none: a
-- config with heads (sdpa, linear); the additive and Luong families have
-- one head of their own widths.
function M.shape(cfg)
  if not cfg.heads_q or not cfg.head_dim then
    return nil, ("info describes multi-head attention (heads_q, head_dim); %s has none"):format(cfg.name)
  end
  return {
    hq = cfg.heads_q,
    hkv = cfg.heads_kv or cfg.heads_q,
    d = cfg.head_dim,
    dv = cfg.head_dim_v or cfg.head_dim,
    -- shared_kv: V is the first Dv values of each K row, so a token's
    -- cache (and its projection) is one row of D values a kv head
    shared_kv = cfg.shared_kv == true,
  }
end

--- The projections' parameters at width d_model: a table of q, k, v, o
-- (each { weights, bias }), and the totals with and without biases.
function M.params(s, d_model)
  local function proj(n_in, n_out) return { weights = n_in * n_out, bias = n_out } end
  local p = {
    q = proj(d_model, s.hq * s.d),
    k = proj(d_model, s.hkv * s.d),
    v = proj(d_model, s.shared_kv and 0 or s.hkv * s.dv),
    o = proj(s.hq * s.dv, d_model),
  }
  p.without_bias, p.with_bias = 0, 0
  for _, name in ipairs({ "q", "k", "v", "o" }) do
    p.without_bias = p.without_bias + p[name].weights
    p.with_bias = p.with_bias + p[name].weights + p[name].bias
  end
  return p
end

--- The learned tables a config's kernel takes besides the projections, as a
-- list of { name, count, note }: T5's or Shaw's relative position table
-- (rows x query heads; T5 keeps one per stack, in its first layer) and
-- gpt-oss's sinks (one logit per query head).  Empty when there are none.
function M.tables(cfg, s)
  local out = {}
  local rb = cfg.rel_bias
  if rb then
    local rows = rb.kind == "t5" and (rb.buckets or 32) or 2 * rb.max_distance + 1
    out[#out + 1] = { name = "rel_table", count = rows * s.hq,
      note = rb.kind == "t5"
        and ("%d buckets x %d heads; T5 keeps one per stack, in its first layer"):format(rows, s.hq)
        or ("%d distances x %d heads"):format(rows, s.hq) }
  end
  if cfg.sinks then
    out[#out + 1] = { name = "sinks", count = s.hq, note = "one logit per query head" }
  end
  return out
end

--- KV-cache bytes per token and layer for each storage type, in the order
-- of M.STORAGE: { name, per_token }, per_token nil where the type cannot
-- hold these head dims.
function M.cache_bytes(s)
  local out = {}
  for _, st in ipairs(M.STORAGE) do
    local fits = not st.block or (s.d % st.block == 0 and s.dv % st.block == 0)
    local values = s.shared_kv and s.d or s.d + s.dv -- shared_kv: one row of D values holds K and V
    out[#out + 1] = { name = st.name, per_token = fits and s.hkv * values * st.bytes or nil }
  end
  return out
end

--- A linear-attention config keeps no cache but a state per sequence and
-- layer: S [Hkv][D][Dv] and z [Hkv][D], f32 (bytes).
function M.state_bytes(s)
  return s.hkv * (s.d * s.dv + s.d) * 4
end

--- The keys one token attends at context length n: n, or fewer under a
-- sliding window (window.left >= 0) or chunks.
function M.keys_seen(cfg, n)
  local keys = n
  local left = cfg.window and cfg.window.left
  if left and left >= 0 then keys = math.min(keys, left + 1) end
  if cfg.chunk and cfg.chunk > 0 then keys = math.min(keys, cfg.chunk) end
  return keys
end

--- FLOPs of one token at context length n (one new query row): the
-- attention (2 Hq keys (D + Dv): scores and P V; a linear config's state
-- update and read, 4 Hq D Dv, whatever n), the projections (2 per weight),
-- and their sum.
function M.flops(cfg, s, p, n, linear)
  local attention = linear and 4 * s.hq * s.d * s.dv or 2 * s.hq * M.keys_seen(cfg, n) * (s.d + s.dv)
  local projections = 2 * p.without_bias
  return { attention = attention, projections = projections, total = attention + projections }
end

--- Everything `attngen info` reports, as a plain table (the --json output).
function M.describe(cfg, d_model, n)
  local s, err = M.shape(cfg)
  if not s then return nil, err end
  local linear = families.of(cfg).memory == "state" -- linear attention: a state, not a cache
  d_model = d_model or s.hq * s.d
  local p = M.params(s, d_model)
  return {
    name = cfg.name,
    kind = cfg.kind,
    heads_q = s.hq, heads_kv = s.hkv, head_dim = s.d, head_dim_v = s.dv,
    shared_kv = s.shared_kv or nil,
    d_model = d_model,
    params = p,
    tables = M.tables(cfg, s),
    kv_cache = not linear and M.cache_bytes(s) or nil,
    state_bytes = linear and M.state_bytes(s) or nil,
    seq = n,
    flops_per_token = M.flops(cfg, s, p, n, linear),
  }
end

--- 1050624 -> "1,050,624"; fractions kept to two places.
function M.grouped(x)
  local int = math.floor(x)
  local s = tostring(int):reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", "")
  if x ~= int then s = s .. ("%.2f"):format(x - int):sub(2) end
  return s
end

return M
