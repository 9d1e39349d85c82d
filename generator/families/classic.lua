--- The classic families' shared table (kind = "additive" and kind =
-- "luong", the attention of RNN encoder-decoders): one head, a row of
-- scores at a time, attn_classic_args.  families/additive.lua and
-- families/luong.lua are M.family(...) with their own score and enum; the
-- fields are described in families/init.lua.
local M = {}

-- what the score of an additive or luong kernel computes
local SCORES = {
  additive = "additive (Bahdanau): e_ij = v . tanh(W_s s_i + W_h h_j%s), U = H W_h^T optional",
  dot = "Luong dot: e_ij = s_i . h_j",
  general = "Luong general: e_ij = h_j . (W s_i)",
  concat = "Luong concat: e_ij = v . tanh(W [h_j; s_i]%s)",
}

--- The vendoring description of a classic kernel (attn_classic_args).  The
-- folder's code adds names and ISAs.
function M.describe(plan)
  local d = { padding = plan.padding, mask = plan.mask }
  local f = { SCORES[plan.score]:format(plan.bias and " + b" or "") }
  if plan.padding then f[#f + 1] = "padding" end
  if plan.mask == "bool" then f[#f + 1] = "boolean mask tensor" end
  f[#f + 1] = "softmax over the keys, context c_i = sum_j a_ij h_j, weights A optional"
  local needs = { "s", "h" }
  if plan.score == "additive" then
    needs[#needs + 1] = "w_s"
    needs[#needs + 1] = "w_h or u"
  elseif plan.score ~= "dot" then
    needs[#needs + 1] = "w"
  end
  if plan.score == "additive" or plan.score == "concat" then needs[#needs + 1] = "v_attn" end
  if plan.bias then needs[#needs + 1] = "b_attn" end
  if plan.padding then needs[#needs + 1] = "seqlens_k" end
  if plan.mask == "bool" then needs[#needs + 1] = "mask (uint8 keep-mask)" end
  d.classic = true
  d.score = plan.score
  d.Ds, d.Dh, d.Da, d.bias = plan.Ds, plan.Dh, plan.Da, plan.bias
  d.shape = ("one head: decoder states of %d, encoder states (keys and values) of %d"):format(plan.Ds, plan.Dh)
    .. (plan.Da > 0 and (", attention layer of %d"):format(plan.Da) or "")
  d.features = table.concat(f, ", ")
  d.needs = "a call needs " .. table.concat(needs, ", ")
  d.needs_short = table.concat(needs, ", ")
  d.dtypes = ("S %s, H and the parameters %s, C %s"):format(plan.dtype.q, plan.dtype.kv, plan.dtype.o)
  -- the parameters the call passes (attn_classic_args fields), and the
  -- example's check of its allocations
  d.params = {}
  if plan.score == "additive" then d.params = { "w_s", "w_h", "v_attn" } end
  if plan.score == "general" then d.params = { "w" } end
  if plan.score == "concat" then d.params = { "w", "v_attn" } end
  if plan.bias then d.params[#d.params + 1] = "b_attn" end
  local ptrs = { "s", "h" }
  for _, p in ipairs(d.params) do ptrs[#ptrs + 1] = p end
  for _, p in ipairs({ "c", "c32", "weights" }) do ptrs[#ptrs + 1] = p end
  if plan.mask == "bool" then ptrs[#ptrs + 1] = "mask" end
  d.null_check = table.concat(ptrs, " == NULL || ") .. " == NULL"
  -- the parameters' shapes, for the example and the README
  if plan.score == "general" then d.w_rows, d.w_cols = plan.Dh, plan.Ds end
  if plan.score == "concat" then d.w_rows, d.w_cols = plan.Da, plan.Dh + plan.Ds end
  return d
end

--- The dims of a raw classic config: one head, the decoder states' size
-- Ds and the encoder states' Dh (default Ds) standing in for the head
-- dims, and the attention layer's Da.
local function dims(c)
  return { heads_q = 1, heads_kv = 1, d = c.query_dim, dv = c.key_dim or c.query_dim, da = c.attn_dim or 0 }
end

--- A classic family's table.  o: name; score(cfg), the score a normalized
-- config computes; spec_family, its attn_family enum; features, its own
-- features of a raw config for the test sets (tests/kernel_sets.lua).
function M.family(o)
  return {
    name = o.name,
    noun = o.name .. " attention",
    schema = "schema." .. o.name,
    planner = "planner.classic",
    matmuls = { "f32" },
    tiled = false,
    memory = "encoder_states",
    args = "attn_classic_args",
    directions = {
      forward = { templates = { h = "families/classic.h.tmpl", c = "families/classic.c.tmpl" } },
    },
    vendor = { describe = M.describe },
    check = { required = { "query_dim" }, dims = dims, features = o.features },
    tune = { buckets = {} },
    bench = { decode_table = false },
    unsupported = {
      tune = "which has no tiles to tune (one head, a row of scores at a time); 'attngen bench' times it",
      plot_mask = "which has no mask rule or tiles to draw (every row sees the keys below its seqlens_k and "
        .. "those its bool mask keeps)",
    },
    -- what planner/classic.lua asks of the kind
    classic = { score = o.score, spec_family = o.spec_family },
  }
end

return M
