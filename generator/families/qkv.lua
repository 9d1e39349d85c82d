--- What the families whose kernels take attn_args (Q, K, V, O: sdpa and
-- linear) share in their tables: the vendoring description and the dims of
-- a raw config.
local M = {}

local function side(n) return n < 0 and "unbounded" or tostring(n) end

--- The vendoring description of a kernel that takes attn_args (Q, K, V):
-- the sdpa family's, and with opts (lead: a first feature, no_scale,
-- linear) the linear family's.  The folder's code adds names and ISAs.
function M.describe(plan, opts)
  opts = opts or {}
  local f = {}
  if opts.lead then f[#f + 1] = opts.lead end
  if plan.causal then f[#f + 1] = plan.top_left and "causal (top-left)" or "causal" end
  if plan.has_left or plan.has_right then
    f[#f + 1] = ("window left %s, right %s"):format(side(plan.window_left),
      plan.causal and "0" or side(plan.window_right))
  end
  if plan.chunk then f[#f + 1] = ("chunks of %d keys"):format(plan.chunk) end
  if plan.sparse then
    f[#f + 1] = plan.sparse.pattern == "strided" and ("sparse strided, stride %d"):format(plan.sparse.stride)
      or ("sparse fixed, block %d, summary %d"):format(plan.sparse.block, plan.sparse.summary)
  end
  if (plan.global_tokens or 0) > 0 then f[#f + 1] = ("%d global tokens"):format(plan.global_tokens) end
  if plan.padding then f[#f + 1] = "padding" end
  if plan.mask == "bool" then f[#f + 1] = "boolean mask tensor" end
  if plan.mask == "bias" then f[#f + 1] = "additive bias tensor" end
  if plan.softcap then f[#f + 1] = ("softcap %.9g"):format(plan.softcap) end
  if plan.alibi then f[#f + 1] = "ALiBi" end
  if plan.rel_bias then
    f[#f + 1] = plan.rel_bias.kind == "t5" and "T5 relative position bias" or "clipped relative position bias"
  end
  if plan.state then f[#f + 1] = "running state" end
  if plan.sinks then f[#f + 1] = "attention sinks" end
  if plan.temperature then
    f[#f + 1] = ("temperature (scale %.9g, floor %.9g)"):format(plan.temperature.scale, plan.temperature.floor)
  end
  if plan.shared_kv then f[#f + 1] = "V read from the first Dv values of each K row (shared_kv)" end
  if plan.qk_norm then
    f[#f + 1] = ("RMS norm of Q and appended K rows (qk_norm, eps %.9g%s)"):format(plan.qk_norm.eps,
      plan.qk_norm.offset == 1 and ", weights 1 + w" or "")
  end
  if not opts.no_scale then f[#f + 1] = ("scale %.9g"):format(plan.scale) end
  if plan.backward then
    f[#f + 1] = ("backward pass %s (gradients in %s)"):format(plan.bwd_entry,
      plan.grad_same and plan.grad.q or (plan.grad.q .. " (dQ) and " .. plan.grad.kv .. " (dK, dV)"))
    -- the parameters' gradients, each an output of its own, asked for per call
    if plan.sinks then f[#f + 1] = ("the sink logits' gradient on request (dsinks, f32 [%d])"):format(plan.Hq) end
    if plan.rel_bias then
      f[#f + 1] = ("the relative position table's gradient on request (drel_table, f32 [%d][%d])"):format(
        plan.rel_rows, plan.Hq)
    end
    if plan.qk_norm then
      f[#f + 1] = ("the query norm weights' gradient on request (dq_norm_w, f32 [%d])"):format(plan.D)
    end
  end

  local needs = {}
  if plan.padding then needs[#needs + 1] = "seqlens_k" end
  if plan.mask == "bool" then needs[#needs + 1] = "mask (uint8 keep-mask)" end
  if plan.mask == "bias" then needs[#needs + 1] = "mask (f32 bias)" end
  if plan.state then needs[#needs + 1] = "state_s and state_z (the f32 running state)" end
  if plan.sinks then needs[#needs + 1] = "sinks (the f32 sink logit of each query head)" end
  if plan.qk_norm then
    needs[#needs + 1] = "q_norm_w (and, appending, k_norm_w: the f32 weights of the rows' norm [D])"
  end
  if plan.rel_bias then
    needs[#needs + 1] = ("rel_table (the f32 relative position table [%d][%d])"):format(plan.rel_rows, plan.Hq)
  end
  if plan.rope and plan.rope.table then
    needs[#needs + 1] = ("rope_cos, rope_sin and rope_rows (the f32 cos and sin of each position's angles "
      .. "[rope_rows][%d])"):format(plan.rope.half)
  end
  return {
    Hq = plan.Hq, Hkv = plan.Hkv, D = plan.D, Dv = plan.Dv,
    shape = ("%d query heads, %d key/value heads, head dim %d (V: %d%s)"):format(plan.Hq, plan.Hkv,
      plan.D, plan.Dv, plan.shared_kv and ", the first values of each K row" or ""),
    features = table.concat(f, ", "),
    needs = #needs > 0 and ("a call needs " .. table.concat(needs, " and ")) or "",
    needs_short = #needs > 0 and table.concat(needs, ", ") or "-",
    padding = plan.padding,
    mask = plan.mask,
    linear = opts.linear or false,
    state = plan.state,
    sinks = plan.sinks or false,
    shared_kv = plan.shared_kv or false,
    qk_norm = plan.qk_norm and true or false,
    rel_rows = plan.rel_bias and plan.rel_rows or nil,
    -- rope = {table = true}: the example's table holds the angles p theta^(-2m/dim)
    rope_table = plan.rope and plan.rope.table and { half = plan.rope.half, dim = plan.rope.dim,
      theta = ("%.17g"):format(plan.rope.theta) } or nil,
    dtypes = ("Q %s, K/V %s, O %s"):format(plan.dtype.q, plan.dtype.kv, plan.dtype.o),
  }
end

--- The dims of a raw config of a family with heads (sdpa, linear): heads,
-- head dims, and no attention layer.
function M.dims(c)
  local hq = c.heads_q or 1
  return { heads_q = hq, heads_kv = c.heads_kv or hq, d = c.head_dim, dv = c.head_dim_v or c.head_dim, da = 0 }
end

return M
