--- The sdpa family's keys (scaled dot-product attention): heads, head
-- dims, the mask rules, the score terms and the decode threshold.
-- normalize() fills them into c with defaults, folding the conveniences
-- (sliding_window, causal) into the window; docs/config.md gives the
-- semantics.
local M = {}

--- Query rows up to which the decode path runs (measured: docs/benchmarks.md).
M.DEFAULT_DECODE_MAX_Q = 16

local MASKS = { "none", "bool", "bias" }
--- causal: false, true (bottom-right positions) or the alignment by name.
local CAUSAL_NAMES = { '"bottom_right"', '"top_left"' }

--- The family's keys, in the order configs are echoed.
M.order = {
  "heads_q", "heads_kv", "head_dim", "head_dim_v", "causal", "window", "sliding_window", "chunk", "sparse",
  "global_tokens", "padding", "mask", "scale", "softcap", "alibi", "rel_bias", "decode_max_q", "prefill_chunk",
  "weights", "dropout", "entropy", "sinks", "temperature", "paged", "backward", "grad_dtype", "shared_kv", "rope",
  "qk_norm",
}

local function heads(raw, c, u)
  if raw.heads_q == nil then return nil, "heads_q", "'heads_q' is required: an integer >= 1" end
  local err = u.int_in("heads_q", raw.heads_q, 1, 65536)
  if err then return nil, "heads_q", err end
  c.heads_q = raw.heads_q
  c.heads_kv = u.default(raw.heads_kv, c.heads_q)
  err = u.int_in("heads_kv", c.heads_kv, 1, 65536)
  if err then return nil, "heads_kv", err end
  if c.heads_q % c.heads_kv ~= 0 then
    return nil, "heads_kv", ("'heads_kv' (%d) must divide 'heads_q' (%d)"):format(c.heads_kv, c.heads_q)
  end
  return true
end

--- The largest head dim: 512, or with shared_kv (multi-head latent
-- attention, whose latent rows are 512 + 64 values) 1024.
M.MAX_HEAD_DIM = 512
M.MAX_HEAD_DIM_SHARED = 1024

local function head_dims(raw, c, u)
  -- (a shared_kv that is not a boolean is refused by its own step)
  local max = (raw.shared_kv ~= nil and raw.shared_kv ~= false) and M.MAX_HEAD_DIM_SHARED or M.MAX_HEAD_DIM
  if raw.head_dim == nil then return nil, "head_dim", ("'head_dim' is required: an integer in 1..%d"):format(max) end
  local err = u.int_in("head_dim", raw.head_dim, 1, max)
  if err then return nil, "head_dim", err end
  c.head_dim = raw.head_dim
  c.head_dim_v = u.default(raw.head_dim_v, c.head_dim)
  err = u.int_in("head_dim_v", c.head_dim_v, 1, max)
  if err then return nil, "head_dim_v", err end
  return true
end

-- causal: false, true or "bottom_right" (normalized to true: positions
-- i + Lk_b - Lq), or "top_left" (kept: positions i)
local function causal(raw, u)
  local v = u.default(raw.causal, false)
  if v == "bottom_right" then return true end
  if type(v) == "boolean" or v == "top_left" then return v end
  return nil, ("'causal' must be true or false, %s or %s, got %s")
    :format(CAUSAL_NAMES[1], CAUSAL_NAMES[2], type(v) == "string" and u.quoted(v) or u.show(v))
end

-- causal, window, sliding_window: one window {left, right}; chunk
local function window(raw, c, u)
  local err
  c.causal, err = causal(raw, u)
  if c.causal == nil then return nil, "causal", err end
  local left, right = -1, -1
  if raw.window ~= nil then
    if raw.sliding_window ~= nil then
      return nil, "sliding_window", "give either 'window' or 'sliding_window', not both"
    end
    if type(raw.window) ~= "table" then
      return nil, "window", ("'window' must be a table {left=int, right=int} (-1 = unbounded), got %s")
        :format(u.show(raw.window))
    end
    err = u.check_subkeys("window", raw.window, { "left", "right" })
    if err then return nil, "window", err end
    left = u.default(raw.window.left, -1)
    right = u.default(raw.window.right, -1)
    err = u.int_in("window.left", left, -1, 2 ^ 30) or u.int_in("window.right", right, -1, 2 ^ 30)
    if err then return nil, "window", err end
  end
  if raw.sliding_window ~= nil then
    err = u.int_in("sliding_window", raw.sliding_window, 1, 2 ^ 30)
    if err then return nil, "sliding_window", err end
    left = raw.sliding_window - 1
  end
  if c.causal then right = 0 end
  c.window = { left = left, right = right }
  c.sliding_window = nil -- folded into window
  if raw.chunk ~= nil then -- absent: no chunks (nil, so that configs without it echo as before)
    err = u.int_in("chunk", raw.chunk, 1, 2 ^ 30)
    if err then return nil, "chunk", err end
  end
  c.chunk = raw.chunk and math.floor(raw.chunk) -- an integer on Lua 5.3+ for 16.0 too
  return true
end

local SPARSE_PATTERNS = { '"strided"', '"fixed"' }
local SPARSE_KEYS = { strided = { "pattern", "stride" }, fixed = { "pattern", "block", "summary" } }

-- sparse: the Sparse Transformer patterns, {pattern = "strided", stride = l}
-- or {pattern = "fixed", block = l, summary = c}; absent: nil (configs
-- without it echo as before).  Both patterns imply causality: a config
-- with sparse and causal = false is made causal (bottom-right).
local function sparse(raw, c, u)
  local s = raw.sparse
  if s == nil then return true end
  local shape = '{pattern = "strided", stride = int} or {pattern = "fixed", block = int, summary = int}'
  if type(s) ~= "table" then
    return nil, "sparse", ("'sparse' must be a table %s, got %s"):format(shape, u.show(s))
  end
  if s.pattern ~= "strided" and s.pattern ~= "fixed" then
    return nil, "sparse", ("'sparse.pattern' must be %s or %s, got %s"):format(SPARSE_PATTERNS[1], SPARSE_PATTERNS[2],
      s.pattern == nil and "nothing" or type(s.pattern) == "string" and u.quoted(s.pattern) or u.show(s.pattern))
  end
  local err = u.check_subkeys("sparse", s, SPARSE_KEYS[s.pattern])
  if err then return nil, "sparse", err end
  if s.pattern == "strided" then
    if s.stride == nil then return nil, "sparse", "'sparse.stride' is required: an integer in 1..1073741824" end
    err = u.int_in("sparse.stride", s.stride, 1, 2 ^ 30)
    if err then return nil, "sparse", err end
    c.sparse = { pattern = "strided", stride = math.floor(s.stride) }
  else
    if s.block == nil then return nil, "sparse", "'sparse.block' is required: an integer in 1..1073741824" end
    err = u.int_in("sparse.block", s.block, 1, 2 ^ 30)
    if err then return nil, "sparse", err end
    if s.summary == nil then
      return nil, "sparse", ("'sparse.summary' is required: an integer in 1..%d (the block)"):format(s.block)
    end
    err = u.int_in("sparse.summary", s.summary, 1, s.block)
    if err then return nil, "sparse", err end
    c.sparse = { pattern = "fixed", block = math.floor(s.block), summary = math.floor(s.summary) }
  end
  if not c.causal then -- implied: j <= p
    c.causal = true
    c.window.right = 0
  end
  return true
end

local function masks(raw, c, u)
  c.global_tokens = u.default(raw.global_tokens, 0)
  local err = u.int_in("global_tokens", c.global_tokens, 0, 2 ^ 30)
  if err then return nil, "global_tokens", err end
  c.padding = u.default(raw.padding, false)
  err = u.bool("padding", c.padding)
  if err then return nil, "padding", err end
  c.mask = u.default(raw.mask, "none")
  if not u.one_of(c.mask, MASKS) then
    return nil, "mask", ("'mask' must be one of %s, got %s"):format(u.list_str(MASKS), u.show(c.mask))
  end
  return true
end

-- scale, softcap, alibi
local function score_terms(raw, c, u)
  local err
  if raw.scale ~= nil then
    err = u.finite_positive("scale", raw.scale)
    if err then return nil, "scale", err end
  end
  c.scale = raw.scale or 1 / math.sqrt(c.head_dim)
  if raw.softcap ~= nil then
    err = u.finite_positive("softcap", raw.softcap)
    if err then return nil, "softcap", err end
  end
  c.softcap = raw.softcap
  c.alibi = u.default(raw.alibi, false)
  err = u.bool("alibi", c.alibi)
  if err then return nil, "alibi", err end
  return true
end

local REL_KINDS = { '"t5"', '"clipped"' }
local REL_KEYS = { t5 = { "kind", "buckets", "max_distance", "bidirectional" }, clipped = { "kind", "max_distance" } }

-- rel_bias: a learned relative position bias, {kind = "t5", buckets = n,
-- max_distance = m, bidirectional = bool} (T5's buckets) or {kind =
-- "clipped", max_distance = k} (Shaw et al.: distances clamped to
-- [-k, k]); absent: nil (configs without it echo as before)
local function rel_bias(raw, c, u)
  local r = raw.rel_bias
  if r == nil then return true end
  local shape = '{kind = "t5", buckets = int, max_distance = int, bidirectional = bool} or '
    .. '{kind = "clipped", max_distance = int}'
  if type(r) ~= "table" then
    return nil, "rel_bias", ("'rel_bias' must be a table %s, got %s"):format(shape, u.show(r))
  end
  if r.kind ~= "t5" and r.kind ~= "clipped" then
    return nil, "rel_bias", ("'rel_bias.kind' must be %s or %s, got %s"):format(REL_KINDS[1], REL_KINDS[2],
      r.kind == nil and "nothing" or type(r.kind) == "string" and u.quoted(r.kind) or u.show(r.kind))
  end
  local err = u.check_subkeys("rel_bias", r, REL_KEYS[r.kind])
  if err then return nil, "rel_bias", err end
  if r.kind == "clipped" then
    if r.max_distance == nil then
      return nil, "rel_bias", "'rel_bias.max_distance' is required: an integer in 0..65536"
    end
    err = u.int_in("rel_bias.max_distance", r.max_distance, 0, 65536)
    if err then return nil, "rel_bias", err end
    c.rel_bias = { kind = "clipped", max_distance = math.floor(r.max_distance) }
    return true
  end
  local bidir = u.default(r.bidirectional, true)
  err = u.bool("rel_bias.bidirectional", bidir)
  if err then return nil, "rel_bias", err end
  local nb = u.default(r.buckets, 32)
  err = u.int_in("rel_bias.buckets", nb, bidir and 4 or 2, 1024)
  if err then return nil, "rel_bias", err end
  if bidir and nb % 2 ~= 0 then
    return nil, "rel_bias", ("'rel_bias.buckets' must be even with bidirectional = true (half a direction), got %d")
      :format(nb)
  end
  local exact = math.floor((bidir and nb / 2 or nb) / 2) -- max_exact: half of a direction's buckets
  local md = u.default(r.max_distance, 128)
  err = u.int_in("rel_bias.max_distance", md, exact + 1, 2 ^ 20)
  if err then return nil, "rel_bias", err end
  c.rel_bias = { kind = "t5", buckets = math.floor(nb), max_distance = math.floor(md), bidirectional = bidir }
  return true
end

-- the decode path's threshold (an attngen key: query rows up to which it runs)
local function decode(raw, c, u)
  c.decode_max_q = u.default(raw.decode_max_q, M.DEFAULT_DECODE_MAX_Q)
  local err = u.int_in("decode_max_q", c.decode_max_q, 0, 64)
  if err then return nil, "decode_max_q", err end
  return true
end

-- the prefill path's chunks of packed keys (an attngen key: keys packed and
-- run at a time; 0 packs all at once); absent normalizes to nil, the
-- planner's choice, so that configs without it echo as before
local function prefill_chunk(raw, c, u)
  if raw.prefill_chunk == nil then return true end
  local err = u.int_in("prefill_chunk", raw.prefill_chunk, 0, 1048576)
  if err then return nil, "prefill_chunk", err end
  c.prefill_chunk = raw.prefill_chunk
  return true
end

-- an optional flag of the kernel's interface: absent or false normalizes to
-- nil, so that configs without it echo (and generate) as before
local function optional_flag(key)
  return function(raw, c, u)
    local err = u.bool(key, u.default(raw[key], false))
    if err then return nil, key, err end
    c[key] = raw[key] or nil
    return true
  end
end
-- weights: the kernel can also write the attention weights P (an output argument)
local weights = optional_flag("weights")
-- dropout: the kernel applies dropout to the attention weights (args
-- dropout_p, dropout_seed, dropout_offset)
local dropout = optional_flag("dropout")
-- entropy: the kernel can also write each row's attention entropy (an output argument)
local entropy = optional_flag("entropy")

-- sinks: a learned logit per query head (args->sinks) joins each row's
-- softmax with no value row (gpt-oss)
local sinks = optional_flag("sinks")

-- temperature = {scale = s, floor = f}: each query row at position p is
-- multiplied by 1 + s * ln(floor((p + 1) / f) + 1) (Llama 4's attention
-- temperature tuning); absent: nil
local function temperature(raw, c, u)
  local t = raw.temperature
  if t == nil then return true end
  local shape = "{scale = number > 0, floor = number > 0}"
  if type(t) ~= "table" then
    return nil, "temperature", ("'temperature' must be a table %s, got %s"):format(shape, u.show(t))
  end
  local err = u.check_subkeys("temperature", t, { "scale", "floor" })
  if err then return nil, "temperature", err end
  for _, k in ipairs({ "scale", "floor" }) do
    if t[k] == nil then
      return nil, "temperature", ("'temperature.%s' is required: a finite number > 0"):format(k)
    end
    err = u.finite_positive("temperature." .. k, t[k])
    if err then return nil, "temperature", err end
  end
  if raw.matmul == "bf16" then
    return nil, "temperature", "'temperature' scales f32 query rows: it does not go with matmul = \"bf16\""
  end
  c.temperature = { scale = t.scale, floor = t.floor }
  return true
end

--- The largest page size (keys a page).
M.MAX_PAGE = 2 ^ 20
local ORDERS = { "NHD", "HND" }

-- paged = {page = P, order = "NHD" | "HND"}: K and V are pools of pages of P
-- keys, found through a block table at run time; it needs the key lengths
-- (seqlens_k), so it implies padding; absent: nil (the contiguous layout)
local function paged(raw, c, u)
  local t = raw.paged
  if t == nil then return true end
  local shape = '{page = integer in 1..1048576, order = "NHD" or "HND"}'
  if type(t) ~= "table" then
    return nil, "paged", ("'paged' must be a table %s, got %s"):format(shape, u.show(t))
  end
  local err = u.check_subkeys("paged", t, { "page", "order" })
  if err then return nil, "paged", err end
  if t.page == nil then return nil, "paged", "'paged.page' is required: an integer in 1..1048576" end
  err = u.int_in("paged.page", t.page, 1, M.MAX_PAGE)
  if err then return nil, "paged", err end
  local order = u.default(t.order, "NHD")
  if not u.one_of(order, ORDERS) then
    return nil, "paged", ("'paged.order' must be one of %s, got %s"):format(u.list_str(ORDERS), u.show(order))
  end
  if raw.padding == false then
    return nil, "paged", "'paged' reads each sequence's key length (seqlens_k): it needs padding = true or none"
  end
  c.padding = true
  c.paged = { page = math.floor(t.page), order = order }
  return true
end

local GRAD_DTYPES = { "f32", "storage" }

-- backward: the kernel also has a backward pass (attn_<name>_bwd), whose
-- gradients are f32 (grad_dtype = "f32") or stored in the types of Q and of
-- K and V (grad_dtype = "storage"); absent: nil.  The options the backward
-- pass does not cover yet are refused here, one line each.
local function backward(raw, c, u)
  local err = u.bool("backward", u.default(raw.backward, false))
  if err then return nil, "backward", err end
  if raw.grad_dtype ~= nil and not raw.backward then
    return nil, "grad_dtype", "'grad_dtype' is the type of the backward pass's gradients: it needs backward = true"
  end
  if not raw.backward then return true end
  local g = u.default(raw.grad_dtype, "f32")
  if not u.one_of(g, GRAD_DTYPES) then
    return nil, "grad_dtype", ("'grad_dtype' must be one of %s, got %s"):format(u.list_str(GRAD_DTYPES), u.show(g))
  end
  local kv = type(raw.dtype) == "table" and raw.dtype.kv or raw.dtype
  if kv == "q8_0" or kv == "q4_0" then
    return nil, "backward", ("backward with dtype.kv = \"%s\" is not supported yet: the gradients of a quantized cache"
      .. " have no storage"):format(kv)
  end
  if raw.matmul == "bf16" then
    return nil, "backward", "backward with matmul = \"bf16\" is not supported yet: the backward pass multiplies in f32"
  end
  if raw.paged ~= nil then
    return nil, "backward", "backward with paged K/V is not supported yet: training keeps K and V contiguous"
  end
  if raw.shared_kv then
    return nil, "backward",
      "backward with shared_kv is not supported yet: a shared row's gradient sums its K and V parts"
  end
  c.backward = true
  c.grad_dtype = raw.grad_dtype
  return true
end

-- shared_kv: V is the first head_dim_v values of each K row (multi-head
-- latent attention in its absorbed form), so the cache is one tensor and
-- args->v is ignored; absent or false: nil
local shared_flag = optional_flag("shared_kv")
local function shared_kv(raw, c, u)
  local ok, key, err = shared_flag(raw, c, u)
  if not ok then return nil, key, err end
  if c.shared_kv and c.head_dim_v > c.head_dim then
    return nil, "shared_kv", ("'shared_kv' reads V from the first head_dim_v values of each K row: "
      .. "head_dim_v (%d) must be at most head_dim (%d)"):format(c.head_dim_v, c.head_dim)
  end
  return true
end

-- rope.scaling: {type = "linear", factor} or {type = "llama3", factor,
-- low_freq_factor, high_freq_factor, original_max_position}
local ROPE_SCALINGS = {
  linear = { "factor" },
  llama3 = { "factor", "low_freq_factor", "high_freq_factor", "original_max_position" },
}
local function rope_scaling(s, u)
  if type(s) ~= "table" or not ROPE_SCALINGS[s.type] then
    return nil, ("'rope.scaling' must be a table {type = \"linear\", factor = f} or {type = \"llama3\", factor, "
      .. "low_freq_factor, high_freq_factor, original_max_position}, got %s"):format(
      type(s) == "table" and ("type " .. u.show(s.type)) or u.show(s))
  end
  local fields = ROPE_SCALINGS[s.type]
  local allowed = { "type" }
  for _, k in ipairs(fields) do allowed[#allowed + 1] = k end
  local err = u.check_subkeys("rope.scaling", s, allowed)
  if err then return nil, err end
  local out = { type = s.type }
  for _, k in ipairs(fields) do
    if s[k] == nil then return nil, ("'rope.scaling.%s' is required: a finite number > 0"):format(k) end
    err = u.finite_positive("rope.scaling." .. k, s[k])
    if err then return nil, err end
    out[k] = s[k]
  end
  if s.type == "llama3" and s.high_freq_factor <= s.low_freq_factor then
    return nil, ("'rope.scaling.high_freq_factor' (%s) must be greater than 'low_freq_factor' (%s)")
      :format(u.show(s.high_freq_factor), u.show(s.low_freq_factor))
  end
  return out
end

-- rope = {style = "neox" | "gptj", theta = 10000, dim = D, scaling = nil,
-- table = false}: rotary position embedding of the query rows at their
-- positions (the cached keys are stored rotated); absent: nil
local function rope(raw, c, u)
  local r = raw.rope
  if r == nil then return true end
  if type(r) ~= "table" then
    return nil, "rope", ("'rope' must be a table {style = \"neox\" or \"gptj\", theta, dim, scaling, table}, got %s")
      :format(u.show(r))
  end
  local err = u.check_subkeys("rope", r, { "style", "theta", "dim", "scaling", "table" })
  if err then return nil, "rope", err end
  local out = { style = u.default(r.style, "neox"), theta = u.default(r.theta, 10000),
    dim = u.default(r.dim, c.head_dim), table = u.default(r.table, false) }
  if out.style ~= "neox" and out.style ~= "gptj" then
    return nil, "rope", ("'rope.style' must be \"neox\" or \"gptj\", got %s")
      :format(type(out.style) == "string" and u.quoted(out.style) or u.show(out.style))
  end
  err = u.finite_positive("rope.theta", out.theta)
  if err then return nil, "rope", err end
  err = u.int_in("rope.dim", out.dim, 2, c.head_dim)
  if err then return nil, "rope", err end
  if out.dim % 2 ~= 0 then return nil, "rope", ("'rope.dim' must be even, got %d"):format(out.dim) end
  err = u.bool("rope.table", out.table)
  if err then return nil, "rope", err end
  if r.scaling ~= nil then
    if out.table then
      return nil, "rope", "'rope.scaling' does not go with table = true: the run-time table holds the scaled angles"
    end
    out.scaling, err = rope_scaling(r.scaling, u)
    if not out.scaling then return nil, "rope", err end
  end
  if raw.matmul == "bf16" then
    return nil, "rope", "'rope' rotates f32 query rows: it does not go with matmul = \"bf16\""
  end
  if raw.matmul == "int8" then
    return nil, "rope",
      "'rope' does not go with matmul = \"int8\" yet: Q would have to be rotated before it is quantized"
  end
  c.rope = out
  return true
end

-- qk_norm = {eps = 1e-6, offset = 0}: RMS norm of each query row (and of
-- each appended key row) over its head_dim values, times a run-time weight
-- (offset + w), before RoPE and the scale; absent: nil
local function qk_norm(raw, c, u)
  local n = raw.qk_norm
  if n == nil then return true end
  if type(n) ~= "table" then
    return nil, "qk_norm", ("'qk_norm' must be a table {eps = e, offset = 0 or 1}, got %s"):format(u.show(n))
  end
  local err = u.check_subkeys("qk_norm", n, { "eps", "offset" })
  if err then return nil, "qk_norm", err end
  if n.eps == nil then return nil, "qk_norm", "'qk_norm.eps' is required: a finite number > 0" end
  err = u.finite_positive("qk_norm.eps", n.eps)
  if err then return nil, "qk_norm", err end
  local offset = u.default(n.offset, 0)
  if offset ~= 0 and offset ~= 1 then
    return nil, "qk_norm", ("'qk_norm.offset' must be 0 (x w) or 1 (x (1 + w), Gemma's), got %s"):format(u.show(offset))
  end
  if raw.matmul == "bf16" then
    return nil, "qk_norm", "'qk_norm' normalizes f32 query rows: it does not go with matmul = \"bf16\""
  end
  if raw.matmul == "int8" then
    return nil, "qk_norm",
      "'qk_norm' does not go with matmul = \"int8\" yet: Q would have to be normalized before it is quantized"
  end
  c.qk_norm = { eps = n.eps, offset = math.floor(offset) }
  return true
end

--- The checks another family with heads, head dims and a causal rule
-- shares (schema/linear.lua): each fills c and returns true, or nil, key,
-- message.
M.shared = {
  heads = heads,
  head_dims = head_dims,
  causal = function(raw, c, u)
    local err
    c.causal, err = causal(raw, u)
    if c.causal == nil then return nil, "causal", err end
    return true
  end,
  padding = function(raw, c, u)
    c.padding = u.default(raw.padding, false)
    local err = u.bool("padding", c.padding)
    if err then return nil, "padding", err end
    return true
  end,
}

--- Fills the family's keys of raw into c; returns true, or nil, key, message.
-- u: the shared checks (schema.util).
function M.normalize(raw, c, u)
  return u.run_steps({ heads, head_dims, window, sparse, masks, score_terms, rel_bias, decode, prefill_chunk, weights,
    dropout, entropy, sinks, temperature, paged, backward, shared_kv, rope, qk_norm }, raw, c, u)
end

return M
