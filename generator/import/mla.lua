--- import-hf for multi-head latent attention (DeepSeek-V2, DeepSeek-V3,
-- Kimi K2): two configs from one config.json.
--
-- Such a layer projects each token to a latent c_KV of kv_lora_rank values
-- and a shared rotary key k_R of qk_rope_head_dim values.  A query head's
-- score is q_nope . (W_UK c_KV) + q_rope . k_R, its value W_UV c_KV.
--   _decode: the absorbed form (as FlashMLA and the serving engines decode):
--     W_UK is folded into the queries and W_UV into the output projection,
--     so every query head attends over the one cache row [c_KV, k_R] of
--     D = kv_lora_rank + qk_rope_head_dim values, and its values are the
--     first Dv = kv_lora_rank of them: heads_kv = 1 and shared_kv = true.
--   _prefill: the per-head form, K = [W_UK c_KV, k_R] of D = qk_nope_head_dim
--     + qk_rope_head_dim values and V = W_UV c_KV of Dv = v_head_dim values
--     a head, num_key_value_heads heads (as many as the query heads).
-- Both scale scores by 1 / sqrt(qk_nope_head_dim + qk_rope_head_dim) (the
-- absorbed product is the same score), times mscale^2 when rope_scaling has
-- mscale_all_dim (transformers' DeepseekV3Attention: mscale = 0.1
-- mscale_all_dim ln(factor) + 1 for factor > 1, else 1).
local json = require("import.json")

local M = {}

local is_null, show, num = json.is_null, json.show, json.num

--- The score scale: { expr (Lua text), value, note }, or nil and an error.
local function mla_scale(r, qk, nope, rope)
  local scale = { expr = ("1 / math.sqrt(%d)"):format(qk), value = 1 / math.sqrt(qk),
    note = ("1 / sqrt(qk_nope_head_dim + qk_rope_head_dim) = 1 / sqrt(%d + %d)"):format(nope, rope) }
  local rs = r.get("rope_scaling")
  if rs == nil then return scale end
  if type(rs) ~= "table" or json.is_list(rs) then
    return r.fail("rope_scaling", ("'rope_scaling' must be an object, got %s"):format(show(rs)))
  end
  local all = rs.mscale_all_dim
  if all == nil or is_null(all) or all == 0 then return scale end
  local factor = rs.factor
  if type(factor) ~= "number" or factor ~= factor or factor <= 0 or factor == math.huge then
    return r.fail("rope_scaling", ("'rope_scaling.factor' must be a number > 0, got %s"):format(show(factor)))
  end
  if type(all) ~= "number" or all ~= all or all == math.huge or all == -math.huge then
    return r.fail("rope_scaling", ("'rope_scaling.mscale_all_dim' must be a number, got %s"):format(show(all)))
  end
  if factor <= 1 then return scale end
  local m = ("(0.1 * %s * math.log(%s) + 1)"):format(num(all), num(factor))
  local mv = 0.1 * all * math.log(factor) + 1
  scale.expr = ("1 / math.sqrt(%d) * %s * %s"):format(qk, m, m)
  scale.value = 1 / math.sqrt(qk) * mv * mv
  scale.note = ("1 / sqrt(%d) times mscale^2, mscale = 0.1 mscale_all_dim ln(factor) + 1 = %.9g (rope_scaling)")
    :format(qk, mv)
  return scale
end

--- An integer key of the family (its default when absent), >= lo.
local function int_key(r, key, lo, label)
  local v = r.get(key)
  if v == nil then return r.fail(nil, ("no '%s' in this %s config"):format(key, label)) end
  return r.int(key, v, lo)
end

--- The two configs' raw tables and lines.
local function parts_of(s)
  local decode_d, decode_dv = s.kvr + s.rope, s.kvr
  local decode = {
    suffix = "_decode", what = "absorbed decode over the latent cache",
    raw = { heads_q = s.heads, heads_kv = 1, head_dim = decode_d, head_dim_v = decode_dv, shared_kv = true,
      causal = true, scale = s.scale.value },
    lines = {
      { key = "heads_q", value = num(s.heads), note = s.hkey },
      { key = "heads_kv", value = "1", note = "one latent cache row a token, shared by every query head" },
      { key = "head_dim", value = num(decode_d), note = ("kv_lora_rank + qk_rope_head_dim = %d + %d")
        :format(s.kvr, s.rope) },
      { key = "head_dim_v", value = num(decode_dv), note = "kv_lora_rank" },
      { key = "shared_kv", value = "true", note = "V is the latent c_KV: the first kv_lora_rank values of each row" },
    },
    extra = ("one latent KV row of %d values a token (V: its first %d)"):format(decode_d, decode_dv),
  }
  local prefill = {
    suffix = "_prefill", what = "prefill (per-head keys and values)",
    raw = { heads_q = s.heads, heads_kv = s.kv ~= s.heads and s.kv or nil, head_dim = s.qk,
      head_dim_v = s.vd ~= s.qk and s.vd or nil, causal = true, scale = s.scale.value },
    lines = { { key = "heads_q", value = num(s.heads), note = s.hkey } },
  }
  if prefill.raw.heads_kv then
    prefill.lines[#prefill.lines + 1] = { key = "heads_kv", value = num(s.kv), note = s.kv_key }
  end
  prefill.lines[#prefill.lines + 1] = { key = "head_dim", value = num(s.qk),
    note = ("qk_nope_head_dim + qk_rope_head_dim = %d + %d"):format(s.nope, s.rope) }
  if prefill.raw.head_dim_v then
    prefill.lines[#prefill.lines + 1] = { key = "head_dim_v", value = num(s.vd), note = "v_head_dim" }
  end
  for _, p in ipairs({ decode, prefill }) do
    p.lines[#p.lines + 1] = { key = "causal", value = "true", note = s.label .. " is a causal decoder" }
    p.lines[#p.lines + 1] = { key = "scale", value = s.scale.expr, note = s.scale.note }
  end
  return { decode, prefill }
end

--- Reads a DeepSeek-V2/V3 or Kimi K2 config.json (r: import.hf's reader,
-- result: its result so far, hf: import.hf for finish).  Returns the result
-- with the _decode and _prefill configs, or nil and a one-line error.
function M.import(j, opts, r, result, family, hf)
  result.label = family.label
  local s = { label = family.label }
  local err
  s.hkey = "num_attention_heads"
  s.heads, err = int_key(r, "num_attention_heads", 1, family.label)
  if not s.heads then return nil, err end
  s.kv_key = "num_key_value_heads"
  local kv = r.get("num_key_value_heads", "the prefill config's kv heads")
  if kv == nil then
    s.kv = s.heads
  else
    s.kv, err = r.int("num_key_value_heads", kv, 1)
    if not s.kv then return nil, err end
  end
  s.kvr, err = int_key(r, "kv_lora_rank", 1, family.label)
  if not s.kvr then return nil, err end
  s.rope, err = int_key(r, "qk_rope_head_dim", 0, family.label)
  if not s.rope then return nil, err end
  s.nope, err = int_key(r, "qk_nope_head_dim", 0, family.label)
  if not s.nope then return nil, err end
  s.vd, err = int_key(r, "v_head_dim", 1, family.label)
  if not s.vd then return nil, err end
  s.qk = s.nope + s.rope
  if s.qk < 1 then return r.fail("qk_nope_head_dim", "'qk_nope_head_dim' + 'qk_rope_head_dim' must be >= 1") end
  for _, k in ipairs({ "q_lora_rank", "num_hidden_layers", "rope_theta" }) do
    if not is_null(j[k]) then r.note(k, show(j[k])) end
  end
  s.scale, err = mla_scale(r, s.qk, s.nope, s.rope)
  if not s.scale then return nil, err end
  for _, p in ipairs(parts_of(s)) do
    p.raw.isa = opts.isa
    local desc = {}
    desc[#desc + 1] = p.raw.heads_kv == 1 and ("%d query heads sharing one KV head (MQA)"):format(s.heads)
      or ("%d heads"):format(s.heads)
    desc[#desc + 1] = ("head dim %d (V: %d)"):format(p.raw.head_dim, p.raw.head_dim_v or p.raw.head_dim)
    desc[#desc + 1] = "causal"
    if p.extra then desc[#desc + 1] = p.extra end
    result.configs[#result.configs + 1] = {
      suffix = p.suffix, raw = p.raw, lines = p.lines, what = p.what, description = table.concat(desc, ", "),
      origin = { heads_q = "num_attention_heads", heads_kv = "num_key_value_heads", head_dim = "kv_lora_rank",
        head_dim_v = "kv_lora_rank", shared_kv = "kv_lora_rank", scale = "rope_scaling" },
    }
  end
  return hf.finish(result, opts, r)
end

return M
