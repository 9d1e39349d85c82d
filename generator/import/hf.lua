--- Hugging Face config.json -> attngen configs.  Reads the attention
-- settings of a model (heads, head dim, which layers use a sliding window
-- or chunked attention, logit soft-capping, score scale, causal or
-- bidirectional) from a decoded config.json (import.json) with the
-- family's rules (import.families), and returns configs in the style of
-- configs/*.lua with their text (import.luawriter), a header naming the
-- source values.
--
-- Sliding windows.  transformers builds the mask of a sliding-window layer
-- in src/transformers/masking_utils.py (sliding_window_overlay): under the
-- causal mask, key k is kept for query q when q - k < W, i.e. the last W
-- keys including the current one; its FlashAttention path passes
-- window_size = (W - 1, 0) for the same band, since FlashAttention's
-- window_size counts keys besides the current one.  attngen's
-- sliding_window = W counts like transformers (docs/config.md, semantics
-- of the sdpa family: window.left = W - 1), so W is carried over
-- unchanged.  (The mask builder transformers used before masking_utils,
-- AttentionMaskConverter, kept W + 1 keys; configs are read with the
-- current semantics.)
--
-- Chunked attention (Llama 4's attention_chunk_size = C): masking_utils'
-- chunked_overlay keeps key k for query q when k // C == q // C, under the
-- causal mask, both counted from the start of the sequence; attngen's
-- chunk = C is the same rule at its bottom-right positions, so C is
-- carried over unchanged.
local families = require("import.families")
local json = require("import.json")
local luawriter = require("import.luawriter")
local schema = require("schema")

local M = {}

local is_null, is_list, show, num, plain = json.is_null, json.is_list, json.show, json.num, json.plain

--- Layer indices (0-based, ascending) in a short form: "0, 2, ..., 40",
-- "28-31", or a list with runs.
function M.layer_list(idx)
  local n = #idx
  if n >= 4 then
    local step = idx[2] - idx[1]
    local even = step > 1
    for i = 3, n do
      if idx[i] - idx[i - 1] ~= step then even = false end
    end
    if even then return ("%d, %d, ..., %d"):format(idx[1], idx[2], idx[n]) end
  end
  local parts, i = {}, 1
  while i <= n do
    local j = i
    while j < n and idx[j + 1] == idx[j] + 1 do j = j + 1 end
    if j - i >= 2 then
      parts[#parts + 1] = ("%d-%d"):format(idx[i], idx[j])
    else
      for k = i, j do parts[#parts + 1] = ("%d"):format(idx[k]) end
    end
    i = j + 1
  end
  return table.concat(parts, ", ")
end

--- A C identifier made from a file or folder name: "Meta-Llama-3-8B" ->
-- "meta_llama_3_8b".  Returns nil when nothing usable is left.
function M.identifier(s)
  s = tostring(s or ""):lower():gsub("[^%w_]", "_"):gsub("_+", "_"):gsub("^_", ""):gsub("_$", "")
  if s == "" then return nil end
  if s:match("^%d") then s = "m_" .. s end
  return (s:sub(1, 56):gsub("_$", ""))
end

-- ---- the reader -------------------------------------------------------------

-- The reader of one config.json: values by key with the family's defaults,
-- each use recorded for the header, errors located at the key's line.
local function reader(j, opts, family)
  local r = { used = {}, seen = {} }
  local defaults = family and family.defaults or {}

  function r.where(key)
    local line = key and json.line_of(opts.text, key)
    if line then return ("%s:%d: "):format(opts.file, line) end
    return opts.file .. ": "
  end

  function r.fail(key, msg) return nil, r.where(key) .. msg end

  --- Reads the keys of t from now on (a multimodal model's text_config).
  function r.descend(t) j = t end

  --- Records a line of the header: key = value (note).
  function r.note(key, shown, note)
    if r.seen[key] then return end
    r.seen[key] = true
    r.used[#r.used + 1] = { key = key, shown = shown, note = note }
  end

  --- The value of `key`: the family's default when absent, nil when null
  -- or absent without a default.  Recorded for the header (with an
  -- optional note) unless absent without a default.
  function r.get(key, note)
    local v = j[key]
    if v == nil and defaults[key] ~= nil then
      local d = defaults[key]
      r.note(key, "absent", ("%s default: %s%s"):format(family.label, show(d), note and ("; " .. note) or ""))
      return d, true
    end
    if v ~= nil then r.note(key, show(v), note) end
    if is_null(v) then return nil end
    return v
  end

  --- The first key of `keys` that is present and not null; returns key, value.
  function r.first(keys)
    for _, k in ipairs(keys) do
      if not is_null(j[k]) then return k, j[k] end
    end
    return nil
  end

  function r.int(key, v, lo)
    if type(v) ~= "number" or v ~= math.floor(v) or v < lo or v >= 2 ^ 31 then
      return nil, r.where(key) .. ("'%s' must be an integer >= %d, got %s"):format(key, lo, show(v))
    end
    return math.floor(v)
  end

  function r.positive(key, v)
    if type(v) ~= "number" or v ~= v or v <= 0 or v == math.huge then
      return nil, r.where(key) .. ("'%s' must be a number > 0, got %s"):format(key, show(v))
    end
    return v
  end

  function r.bool(key, v)
    if v == nil then return nil end
    if type(v) ~= "boolean" then
      return nil, r.where(key) .. ("'%s' must be true or false, got %s"):format(key, show(v))
    end
    return v
  end

  return r
end

-- ---- layers -----------------------------------------------------------------
-- Each function below returns which layers are local (a list of booleans,
-- 1-based by layer, true for a local layer; { all = true } when every layer
-- is; {} when none is), the sliding window W of local layers (or nil) and
-- their chunk size C (or nil), or nil, nil, nil, err.  A model has one kind
-- of local layer: sliding-window or chunked.

--- The chunk size of chunked-attention layers: attention_chunk_size, an
-- integer >= 1; or nil, err naming `why` when it is null or absent.
local function chunk_size(r, why)
  local c = r.get("attention_chunk_size")
  if is_null(c) then
    return nil, r.where("layer_types") .. why .. " but 'attention_chunk_size' is null or absent"
  end
  return r.int("attention_chunk_size", c, 1)
end

--- Which layers are local, from a layer_types list.
local function listed_layer_kinds(j, r, family, types)
  if type(types) ~= "table" or not is_list(types) or #types == 0 then
    return nil, nil, nil, r.where("layer_types") .. ("'layer_types' must be a list of \"full_attention\", "
      .. "\"sliding_attention\" or \"chunked_attention\", got %s"):format(show(types))
  end
  local local_, n_sliding, n_chunked = {}, 0, 0
  for i, t in ipairs(types) do
    if t == "sliding_attention" then
      local_[i] = true
      n_sliding = n_sliding + 1
    elseif t == "chunked_attention" then
      local_[i] = true
      n_chunked = n_chunked + 1
    elseif t == "full_attention" then
      local_[i] = false
    else
      return nil, nil, nil, r.where("layer_types") .. ("'layer_types' entry %d is %s; import-hf reads "
        .. "\"full_attention\", \"sliding_attention\" and \"chunked_attention\""):format(i - 1, show(t))
    end
  end
  local nl = j.num_hidden_layers
  if type(nl) == "number" and nl ~= #types then
    return nil, nil, nil, r.where("layer_types") .. ("'layer_types' has %d entries but 'num_hidden_layers' is %s")
      :format(#types, show(nl))
  end
  if n_sliding > 0 and n_chunked > 0 then
    return nil, nil, nil, r.where("layer_types") .. "'layer_types' has both sliding_attention and "
      .. "chunked_attention layers; import-hf reads one kind of local layer per model"
  end
  r.note("layer_types", ("[%d entries]"):format(#types), n_chunked > 0
    and ("%d chunked_attention, %d full_attention"):format(n_chunked, #types - n_chunked)
    or ("%d sliding_attention, %d full_attention"):format(n_sliding, #types - n_sliding))
  if n_chunked > 0 then
    local first
    for i, t in ipairs(types) do
      if not first and t == "chunked_attention" then first = i - 1 end
    end
    local c, err = chunk_size(r, ("'layer_types' entry %d is \"chunked_attention\""):format(first))
    if not c then return nil, nil, nil, err end
    return local_, nil, c
  end
  if n_sliding == 0 then
    r.get("sliding_window", "no layer uses it")
    return local_, nil, nil
  end
  if family and family.window == "qwen2" then
    local use, err = r.bool("use_sliding_window", r.get("use_sliding_window"))
    if err then return nil, nil, nil, err end
    if not use then
      return nil, nil, nil, r.where("layer_types") .. "'layer_types' has sliding_attention layers but "
        .. "'use_sliding_window' is not true, so transformers gives them no window"
    end
  end
  local w = r.get("sliding_window")
  if is_null(w) then
    return nil, nil, nil, r.where("layer_types") .. "'layer_types' has sliding_attention layers but "
      .. "'sliding_window' is null or absent"
  end
  return local_, w, nil
end

--- Which layers are sliding without a layer_types list, by the family's
-- window rule (an unknown family: every layer).
local function ruled_layer_kinds(j, r, family)
  local sw_key = "sliding_window"
  local rule = family and family.window or (family == nil and "all") or nil
  if rule == nil then
    local v = j[sw_key]
    if not is_null(v) then
      r.note(sw_key, show(v), ("ignored: %s models have no sliding window"):format(family.label))
    end
    return {}, nil, nil
  end
  local err
  if rule == "qwen2" then
    local use = r.get("use_sliding_window")
    use, err = r.bool("use_sliding_window", use)
    if err then return nil, nil, nil, err end
    if not use then
      if j[sw_key] ~= nil then r.note(sw_key, show(j[sw_key]), "not used: use_sliding_window is not true") end
      return {}, nil, nil
    end
  end
  local w = r.get(sw_key)
  if is_null(w) then return {}, nil, nil end
  w, err = r.int(sw_key, w, 1)
  if err then return nil, nil, nil, err end

  if rule == "all" then return { all = true }, w, nil end

  local n = r.get("num_hidden_layers")
  n, err = r.int("num_hidden_layers", n, 1)
  if err then return nil, nil, nil, err end
  local sliding = {}
  if rule == "alternate" then
    for i = 1, n do sliding[i] = (i - 1) % 2 == 0 end
    r.note("layer pattern", "", "no 'layer_types': Gemma-2 alternates, sliding window on even layers")
    return sliding, w, nil
  end
  if rule == "pattern" then -- Gemma-3: layer i is global when (i + 1) % pattern == 0
    local every = r.get("sliding_window_pattern")
    every, err = r.int("sliding_window_pattern", every, 1)
    if err then return nil, nil, nil, err end
    for i = 1, n do sliding[i] = i % every ~= 0 end
    r.note("layer pattern", "", ("no 'layer_types': layers i with (i + 1) %% %d == 0 are global, the others "
      .. "sliding"):format(every))
    return sliding, w, nil
  end
  -- qwen2, with use_sliding_window
  local first = r.get("max_window_layers", "layers from this index on use the window")
  first, err = r.int("max_window_layers", first, 0)
  if err then return nil, nil, nil, err end
  for i = 1, n do sliding[i] = (i - 1) >= first end
  return sliding, w, nil
end

--- Which layers are chunked without a layer_types list (Llama 4): those
-- that use RoPE, by no_rope_layers (1: RoPE) or, when it is absent or
-- empty, every layer but each no_rope_layer_interval-th (transformers'
-- Llama4TextConfig); the NoPE layers have full attention.
-- attention_chunk_size = null: no layer is chunked.
local function chunked_layer_kinds(j, r)
  local c = r.get("attention_chunk_size")
  if is_null(c) then return {}, nil, nil end
  local err
  c, err = r.int("attention_chunk_size", c, 1)
  if err then return nil, nil, nil, err end
  local n = r.get("num_hidden_layers")
  n, err = r.int("num_hidden_layers", n, 1)
  if err then return nil, nil, nil, err end
  local chunked = {}
  local nr = j.no_rope_layers
  if not is_null(nr) and (type(nr) ~= "table" or not is_list(nr)) then
    return nil, nil, nil, r.where("no_rope_layers") .. ("'no_rope_layers' must be a list of 0 and 1, got %s")
      :format(show(nr))
  end
  if not is_null(nr) and #nr > 0 then
    if #nr ~= n then
      return nil, nil, nil, r.where("no_rope_layers") .. ("'no_rope_layers' has %d entries but "
        .. "'num_hidden_layers' is %d"):format(#nr, n)
    end
    for i, v in ipairs(nr) do
      if v ~= 0 and v ~= 1 then
        return nil, nil, nil, r.where("no_rope_layers") .. ("'no_rope_layers' entry %d is %s; 1 (RoPE, chunked "
          .. "attention) or 0 (NoPE, full attention) expected"):format(i - 1, show(v))
      end
      chunked[i] = v == 1
    end
    r.note("no_rope_layers", ("[%d entries]"):format(#nr), "1: RoPE and chunked attention, 0: NoPE and full attention")
    return chunked, nil, c
  end
  local every = r.get("no_rope_layer_interval")
  every, err = r.int("no_rope_layer_interval", every, 1)
  if err then return nil, nil, nil, err end
  for i = 1, n do chunked[i] = i % every ~= 0 end
  if not is_null(nr) then r.note("no_rope_layers", "[]", "empty: the default pattern") end
  r.note("layer pattern", "", ("layers i with (i + 1) %% %d == 0 use NoPE and full "
    .. "attention, the others RoPE and chunked attention"):format(every))
  return chunked, nil, c
end

--- Which layers are local: see the functions above.
local function layer_kinds(j, r, family)
  if not is_null(j.layer_types) then return listed_layer_kinds(j, r, family, j.layer_types) end
  if family and family.chunked == "llama4" then return chunked_layer_kinds(j, r) end
  return ruled_layer_kinds(j, r, family)
end

--- Splits layers into variants: returns { {suffix, window, chunk, layers, total} ... }.
local function variants_of(local_, w, c)
  if local_.all then return { { suffix = "", window = w, chunk = c } } end
  local loc, glob = {}, {}
  for i, s in ipairs(local_) do
    if s then loc[#loc + 1] = i - 1 else glob[#glob + 1] = i - 1 end
  end
  local total = #loc + #glob
  if #loc > 0 and #glob > 0 then
    return {
      { suffix = "_local", window = w, chunk = c, layers = loc, total = total },
      { suffix = "_global", layers = glob, total = total },
    }
  end
  if #loc > 0 then return { { suffix = "", window = w, chunk = c } } end
  return { { suffix = "" } }
end

-- ---- the steps of import ----------------------------------------------------
-- Each step reads part of the attention settings: step(ctx, s) fills in s
-- and returns true, or nil and a one-line error.  ctx: { j (the decoded
-- config.json), opts, r (the reader), family (or nil), mt (model_type),
-- mt_shown, result }.  The order of the steps is the order of the header's
-- "Source values used".

--- The role (decoder or encoder) and the label.
local function read_role(ctx, s)
  if ctx.family then
    s.role = ctx.family.role
    ctx.result.label = ctx.family.label
  else
    s.role, s.role_note = families.role_from_architectures(ctx.j.architectures)
  end
  return true
end

--- The query heads: s.heads, s.hkey (the key read).
local function read_heads(ctx, s)
  local j, r, family = ctx.j, ctx.r, ctx.family
  local hkey, heads = r.first(families.HEADS_KEYS)
  if not hkey and family and family.defaults and family.defaults.num_attention_heads then
    hkey, heads = "num_attention_heads", r.get("num_attention_heads") -- the family's default (noted)
  end
  if not hkey then
    if not family then
      return r.fail(nil, ("%s is not a family import-hf knows (%s) and there is no "
        .. "'num_attention_heads' to read"):format(ctx.mt_shown, table.concat(families.names(), ", ")))
    end
    return r.fail(nil, ("no 'num_attention_heads' (nor n_head, n_heads) in this %s config"):format(family.label))
  end
  local err
  heads, err = r.int(hkey, heads, 1)
  if err then return nil, err end
  r.note(hkey, show(j[hkey]))
  s.hkey, s.heads = hkey, heads
  s.origin.heads_q = hkey
  return true
end

--- A model_type import-hf does not know: read with the common keys when
-- its architectures say whether it is causal, and without ALiBi.
local function check_unknown(ctx, s)
  if ctx.family then return true end
  local j, r, mt = ctx.j, ctx.r, ctx.mt
  if not s.role then
    return r.fail(nil, ("%s is not a family import-hf knows (%s), and its 'architectures' "
      .. "do not say whether it is causal (a ...ForCausalLM or ...ForMaskedLM class)")
      :format(ctx.mt_shown, table.concat(families.names(), ", ")))
  end
  if j.alibi == true or j.position_embedding_type == "alibi"
    or (type(j.attn_config) == "table" and j.attn_config.alibi == true) then
    return r.fail(nil, ("%s uses ALiBi in a way import-hf does not know; write the config by hand")
      :format(ctx.mt_shown))
  end
  local notes = ctx.result.notes
  notes[#notes + 1] = ("%s is not a family import-hf knows: read with the "
    .. "common keys; %s."):format(ctx.mt_shown, s.role_note)
  ctx.result.label = type(mt) == "string" and plain(mt) or "model"
  return true
end

--- Falcon's key/value heads: multi_query and new_decoder_architecture.
local function read_falcon_kv(ctx, s)
  local j, r = ctx.j, ctx.r
  local new_arch, err = r.bool("new_decoder_architecture", r.get("new_decoder_architecture"))
  if err then return nil, err end
  local mq = j.multi_query
  if is_null(mq) then
    mq = true
    r.note("multi_query", "absent", "Falcon default: true")
  else
    r.note("multi_query", show(mq))
    mq, err = r.bool("multi_query", mq)
    if err then return nil, err end
  end
  if new_arch or not mq then
    local key, v = r.first({ "num_kv_heads", "n_head_kv" })
    if key then
      s.kv, err = r.int(key, v, 1)
      if err then return nil, err end
      r.note(key, show(v))
      s.origin.heads_kv = key
    else
      s.kv, s.kv_note = s.heads, "no num_kv_heads: one KV head per query head"
    end
  else
    s.kv, s.kv_note = 1, "multi_query: one KV head (MQA)"
    s.origin.heads_kv = "multi_query"
  end
  return true
end

--- The key/value heads: s.kv, s.kv_note.
local function read_kv_heads(ctx, s)
  if ctx.family and ctx.family.kv == "falcon" then return read_falcon_kv(ctx, s) end
  local j, r = ctx.j, ctx.r
  local key, v = r.first({ "num_key_value_heads", "num_kv_heads" })
  if not key and ctx.family and ctx.family.defaults and ctx.family.defaults.num_key_value_heads then
    key, v = "num_key_value_heads", r.get("num_key_value_heads") -- the family's default (noted)
  end
  if key then
    local err
    s.kv, err = r.int(key, v, 1)
    if err then return nil, err end
    r.note(key, show(v))
    s.origin.heads_kv = key
  elseif j.multi_query == true then
    s.kv, s.kv_note = 1, "multi_query: one KV head (MQA)"
    r.note("multi_query", "true")
    s.origin.heads_kv = "multi_query"
  else
    s.kv, s.kv_note = s.heads, "MHA: one KV head per query head"
    r.note("num_key_value_heads", show(j.num_key_value_heads), "MHA: one KV head per query head")
  end
  return true
end

--- The head dim: s.head_dim, s.hd_note (head_dim, the family's default,
-- or the hidden size over the heads).
local function read_head_dim(ctx, s)
  local j, r, family = ctx.j, ctx.r, ctx.family
  local err
  if not is_null(j.head_dim) then
    s.head_dim, err = r.int("head_dim", j.head_dim, 1)
    if err then return nil, err end
    r.note("head_dim", show(j.head_dim))
    s.hd_note = "head_dim"
    s.origin.head_dim = "head_dim"
    return true
  end
  if family and family.defaults and family.defaults.head_dim then
    s.head_dim = family.defaults.head_dim
    r.note("head_dim", show(j.head_dim), ("%s default: %d"):format(family.label, s.head_dim))
    s.hd_note = ("%s default head_dim"):format(family.label)
    return true
  end
  local key, hidden = r.first(families.HIDDEN_KEYS)
  if not key then
    return r.fail(nil, ("no 'head_dim' and no 'hidden_size' (nor n_embd, d_model) to derive it from"))
  end
  hidden, err = r.int(key, hidden, 1)
  if err then return nil, err end
  r.note(key, show(j[key]))
  if hidden % s.heads ~= 0 then
    return r.fail(key, ("'%s' (%d) is not divisible by '%s' (%d) and there is no 'head_dim'")
      :format(key, hidden, s.hkey, s.heads))
  end
  s.head_dim = math.floor(hidden / s.heads)
  s.hd_note = ("%s / %s = %d / %d"):format(key, s.hkey, hidden, s.heads)
  s.origin.head_dim = key
  return true
end

--- Causal or not, padded batches or not: s.causal, s.padding and
-- s.causal_note (the comment on the causal line).
local function read_causal(ctx, s)
  local j, r = ctx.j, ctx.r
  s.causal, s.padding = false, false
  if s.role == "decoder" then
    s.causal = true
    s.causal_note = ctx.family and (ctx.result.label .. " is a causal decoder") or s.role_note
    local bidir = j.use_bidirectional_attention
    if not is_null(bidir) and bidir ~= false then
      if bidir ~= true then
        return r.fail("use_bidirectional_attention", ("'use_bidirectional_attention' = %s is not something "
          .. "import-hf reads (true or false)"):format(show(bidir)))
      end
      r.note("use_bidirectional_attention", "true")
      s.causal = false
    end
  elseif s.role == "text_encoder" then
    local dec = j.is_decoder
    if not is_null(dec) then
      r.note("is_decoder", show(dec))
      local err
      dec, err = r.bool("is_decoder", dec)
      if err then return nil, err end
    end
    if dec then
      s.causal, s.causal_note = true, "is_decoder = true"
    else
      s.padding = true
    end
  end
  return true
end

--- The score scale: s.raw_scale ({expr, value}) and s.scale_note, from
-- query_pre_attn_scalar, or GPT-2's scale_attn_weights = false.
local function read_scale(ctx, s)
  local j, r = ctx.j, ctx.r
  local err
  local qpas = r.get("query_pre_attn_scalar")
  if not is_null(qpas) then
    qpas, err = r.positive("query_pre_attn_scalar", qpas)
    if err then return nil, err end
    local root = math.sqrt(qpas)
    if root == math.floor(root) then
      s.raw_scale = { expr = "1 / " .. num(root), value = 1 / root }
    else
      s.raw_scale = { expr = "1 / math.sqrt(" .. num(qpas) .. ")", value = 1 / root }
    end
    s.scale_note = ("1 / sqrt(query_pre_attn_scalar), query_pre_attn_scalar = %s"):format(num(qpas))
    s.origin.scale = "query_pre_attn_scalar"
  end
  if ctx.mt ~= "gpt2" then return true end
  local saw = j.scale_attn_weights
  if saw ~= nil then
    r.note("scale_attn_weights", show(saw))
    saw, err = r.bool("scale_attn_weights", saw)
    if err then return nil, err end
    if saw == false then
      s.raw_scale = { expr = "1.0", value = 1 }
      s.scale_note = "scale_attn_weights = false: scores are not scaled"
    end
  end
  if j.scale_attn_by_inverse_layer_idx == true then
    return r.fail("scale_attn_by_inverse_layer_idx", "'scale_attn_by_inverse_layer_idx' = true scales each "
      .. "layer differently; attngen configs have one scale (import with it false and set 'scale' per layer)")
  end
  return true
end

--- Logit soft-capping: s.softcap or nil.
local function read_softcap(ctx, s)
  local softcap = ctx.r.get("attn_logit_softcapping")
  if is_null(softcap) then return true end
  local err
  s.softcap, err = ctx.r.positive("attn_logit_softcapping", softcap)
  if err then return nil, err end
  return true
end

--- ALiBi: s.alibi (BLOOM); Falcon's alibi = true cannot be expressed.
local function read_alibi(ctx, s)
  local j, r, family = ctx.j, ctx.r, ctx.family
  s.alibi = false
  if family and family.alibi then
    s.alibi = true
    r.note("ALiBi", "", family.label .. " always adds ALiBi biases with the paper's slopes; its bias slope * k "
      .. "differs from attngen's -slope * |q - k| by a constant per query row under the causal mask, so the "
      .. "output is the same and the LSE differs by that constant")
  end
  if family and family.kv == "falcon" then
    local a = j.alibi
    if a == true then
      return r.fail("alibi", "Falcon with 'alibi' = true adds the ALiBi bias before the 1/sqrt(head_dim) "
        .. "scale; attngen's alibi is added after it, so import-hf cannot express it")
    end
    if a ~= nil then r.note("alibi", show(a)) end
  end
  return true
end

--- The layers: s.variants, one config each (see variants_of).
local function read_layers(ctx, s)
  local r = ctx.r
  local layers, w, c, lerr = layer_kinds(ctx.j, r, ctx.family)
  if not layers then return nil, lerr end
  if w then
    local err
    w, err = r.int("sliding_window", w, 1)
    if err then return nil, err end
  end
  s.variants = variants_of(layers, w, c)
  s.origin.chunk = "attention_chunk_size"
  if s.causal then return true end
  for _, v in ipairs(s.variants) do
    if v.window then
      return r.fail("sliding_window", "a bidirectional model with sliding-window layers: import-hf reads "
        .. "sliding windows of causal models only; write window = {left = ..., right = ...} by hand")
    end
    if v.chunk then
      return r.fail("attention_chunk_size", "a bidirectional model with chunked-attention layers: import-hf "
        .. "reads chunked attention of causal models only; write chunk = ... by hand")
    end
  end
  return true
end

--- gpt-oss's attention sinks: s.sinks, every layer.
local function read_sinks(ctx, s)
  if not (ctx.family and ctx.family.sinks) then return true end
  s.sinks = true
  ctx.r.note("sinks", "", ("%s learns one sink logit per query head and layer (self_attn.sinks), passed to the "
    .. "kernel at run time"):format(ctx.family.label))
  return true
end

--- Llama 4's attention temperature on its NoPE layers (the full-attention
-- variant beside the chunked one): v.temperature, from
-- attn_temperature_tuning, attn_scale and floor_scale.
local function read_temperature(ctx, s)
  local r = ctx.r
  if not (ctx.family and ctx.family.chunked == "llama4") then return true end
  -- transformers tests it for truth: Llama-4-Scout publishes 4
  local tune = r.get("attn_temperature_tuning", "on when true or a nonzero number (transformers tests its truth)")
  if tune ~= nil and type(tune) ~= "boolean" and type(tune) ~= "number" then
    return r.fail("attn_temperature_tuning", ("'attn_temperature_tuning' must be true, false or a number, got %s")
      :format(show(tune)))
  end
  if not tune or tune == 0 then return true end
  local scale, floor_, err
  scale, err = r.positive("attn_scale", r.get("attn_scale"))
  if err then return nil, err end
  floor_, err = r.positive("floor_scale", r.get("floor_scale"))
  if err then return nil, err end
  -- the variant without chunks holds the NoPE layers, unless attention_chunk_size
  -- is null: then one config holds every layer, RoPE and NoPE alike
  local nope
  for _, v in ipairs(s.variants) do
    if not v.chunk then nope = v end
  end
  if not nope then return true end -- every layer is chunked (RoPE)
  if ctx.j.attention_chunk_size ~= nil and is_null(ctx.j.attention_chunk_size) then
    r.note("NoPE layers", "", "not apart: 'attention_chunk_size' is null, so one config holds every layer and "
      .. "the temperature of the NoPE layers is left out; write temperature = {...} in a config of those layers")
    return true
  end
  nope.temperature = { scale = scale, floor = floor_ }
  return true
end

-- the rope_scaling types the kernel computes; any other is the caller's table
local ROPE_SCALINGS = {
  linear = { "factor" },
  llama3 = { "factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings" },
}

--- rope_scaling: a kernel scaling, nil (none, or "default"), or true where
-- the caller's table must hold the angles (any other type).
local function rope_scaling(ctx)
  local r = ctx.r
  local sc = r.get("rope_scaling")
  if sc == nil then return nil end
  if type(sc) ~= "table" then
    return r.fail("rope_scaling", ("'rope_scaling' must be an object, got %s"):format(show(sc)))
  end
  local ty = sc.rope_type or sc.type
  if ty == "default" then return nil end
  local fields = ROPE_SCALINGS[ty]
  if not fields then
    r.note("rope_scaling", "", ("type %s: its angles (%s) are not the kernel's; the config takes them from the "
      .. "caller's cos / sin table (rope = {table = true})"):format(show(ty), show(ty)))
    return true
  end
  local out = { type = ty }
  for _, k in ipairs(fields) do
    local v, err = r.positive("rope_scaling." .. k, sc[k])
    if err then return nil, err end
    out[k == "original_max_position_embeddings" and "original_max_position" or k] = v
  end
  return out
end

--- RoPE: s.rope for the families that rotate Q and K (rotate_half pairs):
-- rope_theta (GPT-NeoX: rotary_emb_base), rope_scaling, and the partial
-- rotary keys rotary_dim, partial_rotary_factor or rotary_pct.
local function read_rope(ctx, s)
  local fam, r, j = ctx.family, ctx.r, ctx.j
  if not (fam and fam.rope) then return true end
  local key = fam.rope_theta_key or "rope_theta"
  local theta, err = r.positive(key, r.get(key) or 10000)
  if err then return nil, err end
  local rope = { style = "neox", theta = theta }
  local dim
  if j.rotary_dim ~= nil and not is_null(j.rotary_dim) then
    dim, err = r.int("rotary_dim", r.get("rotary_dim"), 2)
    if err then return nil, err end
  else
    local fkey = (j.partial_rotary_factor ~= nil or fam.defaults and fam.defaults.partial_rotary_factor)
      and "partial_rotary_factor" or (j.rotary_pct ~= nil or fam.defaults and fam.defaults.rotary_pct)
      and "rotary_pct" or nil
    if fkey then
      local f
      f, err = r.positive(fkey, r.get(fkey))
      if err then return nil, err end
      dim = math.floor(s.head_dim * f)
    end
  end
  if dim and (dim < 2 or dim > s.head_dim or dim % 2 ~= 0) then
    return r.fail("rope", ("the rotated dims (%d) must be even and in 2..head_dim (%d)"):format(dim, s.head_dim))
  end
  if dim and dim ~= s.head_dim then rope.dim = dim end
  local sc
  sc, err = rope_scaling(ctx)
  if err then return nil, err end
  if sc == true then
    rope.table = true
    rope.theta = nil -- the table holds the angles
  elseif sc then
    rope.scaling = sc
  end
  s.rope = rope
  if fam.rope_local_key then -- Gemma-3: the sliding-window layers rotate with a base of their own, unscaled
    local base
    base, err = r.positive(fam.rope_local_key, r.get(fam.rope_local_key) or 10000)
    if err then return nil, err end
    s.rope_local = { style = rope.style, theta = base, dim = rope.dim }
    s.rope_local_key = fam.rope_local_key
  end
  return true
end

--- qk_norm: s.qk_norm for the families that RMS-normalize Q and K rows in
-- each head (Qwen3, Gemma-3), eps from rms_norm_eps, every layer.
local function read_qk_norm(ctx, s)
  local fam, r = ctx.family, ctx.r
  if not (fam and fam.qk_norm) then return true end
  local spec = fam.qk_norm
  if spec.flag then
    local on = r.get(spec.flag, "an L2 norm of Q and K without weights on the RoPE layers: qk_norm, weights of ones")
    if on ~= nil and type(on) ~= "boolean" then
      return r.fail(spec.flag, ("'%s' must be true or false, got %s"):format(spec.flag, show(on)))
    end
    if not on then return true end
  end
  local eps, err = r.positive("rms_norm_eps", r.get("rms_norm_eps", "the eps of q_norm and k_norm"))
  if err then return nil, err end
  s.qk_norm = { eps = eps, offset = spec.offset, ones = spec.rope_layers }
  if spec.rope_layers then
    -- the RoPE layers are the chunked variant's; one config of every layer
    -- (attention_chunk_size null) holds NoPE layers too, which have no norm
    local any = false
    for _, v in ipairs(s.variants) do
      v.no_qk_norm = not v.chunk
      any = any or v.chunk ~= nil
    end
    if not any then
      r.note("qk_norm", "", "not apart: 'attention_chunk_size' is null, so one config holds RoPE and NoPE layers and "
        .. "the norm of the RoPE layers is left out; write qk_norm = {...} in a config of those layers")
    end
  end
  return true
end

local STEPS = {
  read_role, read_heads, check_unknown, read_kv_heads, read_head_dim, read_causal, read_scale, read_softcap,
  read_alibi, read_layers, read_sinks, read_temperature, read_rope, read_qk_norm,
}

-- ---- keys that change attention --------------------------------------------

--- Keys that change attention's shape or math, which a family reads only
-- where its table says so (families.lua, reads): elsewhere each is an error
-- naming it, unless --common-keys.  A value of null, false, 0 or an empty
-- list changes nothing and passes.
M.ATTENTION_KEYS = {
  kv_lora_rank = "multi-head latent attention (a latent KV cache)",
  qk_rope_head_dim = "multi-head latent attention (rotary and non-rotary parts of a head)",
  qk_nope_head_dim = "multi-head latent attention (rotary and non-rotary parts of a head)",
  no_rope_layers = "layers without RoPE",
  attn_temperature_tuning = "an attention temperature",
}
local ATTENTION_KEY_ORDER = { "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "no_rope_layers",
  "attn_temperature_tuning" }

--- The rope_scaling types whose rotation (and any factor on its cos and
-- sin) is applied outside the kernel, so that attention is read as usual:
-- DeepSeek's yarn also scales the scores (its mscale), which the MLA
-- import reads.
M.ROPE_TYPES = { default = true, linear = true, dynamic = true, llama3 = true, yarn = true, longrope = true }

local function changes_nothing(v)
  return v == nil or is_null(v) or v == false or v == 0 or (type(v) == "table" and is_list(v) and #v == 0)
end

--- The attention-changing keys of j its family does not read, and a
-- rope_scaling type import-hf cannot express: an error naming the first,
-- or with opts.common_keys a note naming them all.  Returns true, or nil
-- and the error.
function M.check_attention_keys(j, r, family, opts, notes)
  local reads = family and family.reads or {}
  local ignored = {}
  for _, k in ipairs(ATTENTION_KEY_ORDER) do
    if not reads[k] and not changes_nothing(j[k]) then
      if not opts.common_keys then
        return r.fail(k, ("'%s' = %s changes attention (%s), which import-hf does not read for %s; "
          .. "--common-keys reads the common keys only and leaves it out"):format(k, show(j[k]),
          M.ATTENTION_KEYS[k], family and family.label or "this model_type"))
      end
      ignored[#ignored + 1] = k
    end
  end
  local rs = j.rope_scaling
  if type(rs) == "table" and not is_list(rs) then
    local t = rs.rope_type
    if t == nil or is_null(t) then t = rs.type end
    if t ~= nil and not is_null(t) and not (type(t) == "string" and M.ROPE_TYPES[t]) then
      if not opts.common_keys then
        return r.fail("rope_scaling", ("'rope_scaling' has type %s, which import-hf cannot express (it reads "
          .. "default, linear, dynamic, llama3, yarn and longrope); --common-keys reads the common keys only and "
          .. "leaves it out"):format(show(t)))
      end
      ignored[#ignored + 1] = "rope_scaling"
    end
  end
  if #ignored > 0 then
    notes[#notes + 1] = ("--common-keys: read with the common keys only; left out: %s.")
      :format(table.concat(ignored, ", "))
  end
  return true
end

-- ---- the configs ------------------------------------------------------------

--- The one-line description of a config (its header's first line).
local function describe(raw, w, extra, cross)
  local parts = {}
  if raw.heads_kv == nil then
    parts[#parts + 1] = ("%d heads"):format(raw.heads_q)
  elseif raw.heads_kv == 1 then
    parts[#parts + 1] = ("%d query heads sharing one KV head (MQA)"):format(raw.heads_q)
  else
    parts[#parts + 1] = ("%d query heads, %d KV heads (GQA)"):format(raw.heads_q, raw.heads_kv)
  end
  parts[#parts + 1] = ("head dim %d"):format(raw.head_dim)
  parts[#parts + 1] = raw.causal and "causal" or (cross and "no causal mask" or "bidirectional")
  if w then parts[#parts + 1] = ("sliding window of %d keys"):format(w) end
  if raw.chunk then parts[#parts + 1] = ("chunked attention in chunks of %d keys"):format(raw.chunk) end
  if raw.softcap then parts[#parts + 1] = ("logit softcap %s"):format(num(raw.softcap)) end
  if raw.alibi then parts[#parts + 1] = "ALiBi" end
  if raw.sinks then parts[#parts + 1] = "attention sinks" end
  if raw.temperature then parts[#parts + 1] = "attention temperature" end
  if raw.padding then parts[#parts + 1] = "padded batches (per-sequence key lengths)" end
  if extra then parts[#parts + 1] = extra end
  return table.concat(parts, ", ")
end

--- The comment above a sliding_window line: the HF value, its meaning and
-- the conversion.
function M.window_comment(w)
  return {
    ("HF sliding_window = %s: transformers keeps key k for query q when q - k < %s, the last %s keys")
      :format(num(w), num(w), num(w)),
    ("including the current one (FlashAttention: window_size = (%s, 0)). attngen's sliding_window counts")
      :format(num(w - 1)),
    ("the same keys (window.left = %s), so the value is unchanged."):format(num(w - 1)),
  }
end

--- The comment above a chunk line: the HF value, its meaning and the
-- conversion.
function M.chunk_comment(c)
  return {
    ("HF attention_chunk_size = %s: transformers keeps key k for query q when k // %s == q // %s (and k <= q),")
      :format(num(c), num(c), num(c)),
    "positions counted from the start of the sequence. attngen's chunk counts the same keys at its positions",
    "(bottom-right: a KV cache holding the sequence from position 0 gives the absolute positions).",
  }
end

--- The line of a rope table ({key, value, note, pre}).
function M.rope_line(rope, theta_key)
  local parts = { ('style = "%s"'):format(rope.style) }
  if not rope.table then parts[#parts + 1] = ("theta = %s"):format(num(rope.theta, true)) end
  if rope.dim then parts[#parts + 1] = ("dim = %d"):format(rope.dim) end
  local sc = rope.scaling
  if sc then
    local f = { ('type = "%s"'):format(sc.type), ("factor = %s"):format(num(sc.factor, true)) }
    if sc.type == "llama3" then
      f[#f + 1] = ("low_freq_factor = %s"):format(num(sc.low_freq_factor, true))
      f[#f + 1] = ("high_freq_factor = %s"):format(num(sc.high_freq_factor, true))
      f[#f + 1] = ("original_max_position = %s"):format(num(sc.original_max_position, true))
    end
    parts[#parts + 1] = ("scaling = { %s }"):format(table.concat(f, ", "))
  end
  local line = { key = "rope", note = theta_key and ("theta from %s; Q rotated in the kernel, cached K stored rotated")
    :format(theta_key) or "Q rotated in the kernel; cached K stored rotated" }
  if rope.table then
    parts[#parts + 1] = "table = true"
    line.pre = { "rope_scaling is of a type the kernel does not compute: pass each position's cos and sin",
      "(args->rope_cos, rope_sin [T][dim/2]) as transformers' rotary embedding computes them." }
  end
  line.value = "{ " .. table.concat(parts, ", ") .. " }"
  return line
end

--- The config table of variant v (what schema.normalize reads).
local function raw_config(s, v, isa)
  local raw = {
    heads_q = s.heads,
    heads_kv = s.kv ~= s.heads and s.kv or nil,
    head_dim = s.head_dim,
    causal = s.causal or nil,
    sliding_window = v.window,
    chunk = v.chunk,
    padding = s.padding or nil,
    softcap = s.softcap,
    alibi = s.alibi or nil,
    sinks = s.sinks or nil,
    temperature = v.temperature,
    rope = v.window and s.rope_local or s.rope,
    qk_norm = s.qk_norm and not v.no_qk_norm and { eps = s.qk_norm.eps, offset = s.qk_norm.offset == 1 and 1 or nil }
      or nil,
    isa = isa,
  }
  if s.raw_scale then raw.scale = s.raw_scale.value end
  return raw
end

--- The lines of variant v's file ({key, value, note, pre}, see luawriter).
local function config_lines(s, v, raw)
  local lines = {
    { key = "heads_q", value = num(s.heads), note = s.hkey },
  }
  if raw.heads_kv then
    lines[#lines + 1] = { key = "heads_kv", value = num(s.kv), note = s.kv_note or s.origin.heads_kv }
  end
  lines[#lines + 1] = { key = "head_dim", value = num(s.head_dim), note = s.hd_note }
  if s.causal then lines[#lines + 1] = { key = "causal", value = "true", note = s.causal_note } end
  if v.window then
    lines[#lines + 1] = { key = "sliding_window", value = num(v.window), pre = M.window_comment(v.window) }
  end
  if v.chunk then
    lines[#lines + 1] = { key = "chunk", value = num(v.chunk), pre = M.chunk_comment(v.chunk) }
  end
  if s.padding then
    lines[#lines + 1] = { key = "padding", value = "true", note = "per-sequence key lengths (padded batches)" }
  end
  if s.softcap then
    lines[#lines + 1] = { key = "softcap", value = num(s.softcap, true), note = "attn_logit_softcapping" }
  end
  if s.raw_scale then lines[#lines + 1] = { key = "scale", value = s.raw_scale.expr, note = s.scale_note } end
  if s.alibi then lines[#lines + 1] = { key = "alibi", value = "true" } end
  if s.sinks then
    lines[#lines + 1] = { key = "sinks", value = "true",
      note = "self_attn.sinks: one logit per query head (args->sinks)" }
  end
  if v.temperature then
    lines[#lines + 1] = { key = "temperature",
      value = ("{ scale = %s, floor = %s }"):format(num(v.temperature.scale, true), num(v.temperature.floor, true)),
      note = "attn_temperature_tuning: attn_scale, floor_scale" }
  end
  if raw.rope then lines[#lines + 1] = M.rope_line(raw.rope, v.window and s.rope_local and s.rope_local_key) end
  if raw.qk_norm then
    local q = raw.qk_norm
    lines[#lines + 1] = { key = "qk_norm",
      value = ("{ eps = %s%s }"):format(num(q.eps, true), q.offset == 1 and ", offset = 1" or ""),
      note = s.qk_norm.ones and "use_qk_norm: eps from rms_norm_eps, weights of ones (args->q_norm_w, k_norm_w)"
        or ("q_norm, k_norm: eps from rms_norm_eps, weights %s (args->q_norm_w, k_norm_w)")
        :format(q.offset == 1 and "as 1 + w" or "w") }
  end
  return lines
end

--- One config of the result: variant v of the settings s.
local function variant_config(s, v, opts)
  local raw = raw_config(s, v, opts.isa)
  local c = { suffix = v.suffix, raw = raw, lines = config_lines(s, v, raw), window = v.window, origin = s.origin }
  c.what = "attention"
  local kind = v.window and "Sliding-window" or v.chunk and "Chunked-attention" or "Full-attention"
  if v.layers then c.what = kind:lower() .. " layers" end
  c.description = describe(raw, v.window, s.role == "vision_encoder" and "fixed-length inputs" or nil)
  if v.layers then
    c.layers_note = ("%s layers: %d of %d (%s)"):format(kind, #v.layers, v.total, M.layer_list(v.layers))
  end
  return c
end

-- ---- import -----------------------------------------------------------------

--- The context of one import (see the steps), or nil and an error for a
-- model_type that is not a string.
local function begin(j, opts)
  local mt = j.model_type
  local family = families.get(mt)
  local r = reader(j, opts, family)
  local ctx = {
    j = j, opts = opts, r = r, family = family, mt = mt,
    mt_shown = is_null(mt) and "(no 'model_type')" or ("model_type " .. show(mt)),
    result = { model_type = mt, used = r.used, notes = {}, configs = {} },
  }
  if not is_null(mt) and type(mt) ~= "string" then
    return r.fail("model_type", ("'model_type' must be a string, got %s"):format(show(mt)))
  end
  r.note("model_type", show(mt))
  if not is_null(j.architectures) then r.note("architectures", show(j.architectures)) end
  if family and family.note then ctx.result.notes[#ctx.result.notes + 1] = family.note end
  if family and family.text_config then
    local tc = j.text_config
    if type(tc) ~= "table" or is_list(tc) then
      return r.fail("text_config", ("%s keeps its language model's keys in 'text_config', an object; got %s")
        :format(family.label, is_null(tc) and "nothing" or show(tc)))
    end
    r.note("text_config", "{...}", "the keys below are read from it")
    r.descend(tc)
    ctx.j = tc
  end
  return ctx
end

--- Reads a decoded config.json.  opts: file (the path shown), text (the
-- JSON text, to locate keys), name (base name of the configs), isa (a
-- list or nil), command (the command line shown in the header).
-- Returns { model_type, label, used, notes, configs = { {name, raw,
-- lines, description, layers_note} } }, or nil and a one-line error.
function M.import(j, opts)
  local ctx, err = begin(j, opts)
  if not ctx then return nil, err end
  local checked, kerr = M.check_attention_keys(ctx.j, ctx.r, ctx.family, opts, ctx.result.notes)
  if not checked then return nil, kerr end
  if ctx.family and ctx.family.role == "mla" then
    return require("import.mla").import(ctx.j, opts, ctx.r, ctx.result, ctx.family, M)
  end
  if ctx.family and ctx.family.role == "encoder_decoder" then
    return M.import_whisper(j, opts, ctx.r, ctx.result)
  end
  if ctx.family and ctx.family.role == "t5" then
    return M.import_t5(j, opts, ctx.r, ctx.result, ctx.family)
  end
  local s = { origin = {} }
  for _, step in ipairs(STEPS) do
    local ok, serr = step(ctx, s)
    if not ok then return nil, serr end
  end
  for _, v in ipairs(s.variants) do
    ctx.result.configs[#ctx.result.configs + 1] = variant_config(s, v, opts)
  end
  return M.finish(ctx.result, opts, ctx.r)
end

--- Whisper: encoder self-attention, decoder self-attention and the
-- decoder's cross-attention over the encoder frames.
function M.import_whisper(j, opts, r, result)
  result.label = "Whisper"
  local key, hidden = r.first({ "d_model", "hidden_size" })
  if not key then return r.fail(nil, "no 'd_model' in this Whisper config") end
  local err
  hidden, err = r.int(key, hidden, 1)
  if err then return nil, err end
  r.note(key, show(j[key]))
  local function side(hkey)
    if is_null(j[hkey]) then return r.fail(nil, ("no '%s' in this Whisper config"):format(hkey)) end
    local h, e = r.int(hkey, j[hkey], 1)
    if e then return nil, e end
    r.note(hkey, show(j[hkey]))
    if hidden % h ~= 0 then
      return r.fail(hkey, ("'%s' (%d) is not divisible by '%s' (%d)"):format(key, hidden, hkey, h))
    end
    return h
  end
  local eh, dh
  eh, err = side("encoder_attention_heads")
  if not eh then return nil, err end
  dh, err = side("decoder_attention_heads")
  if not dh then return nil, err end
  local parts = {
    { suffix = "_encoder", heads = eh, hkey = "encoder_attention_heads", what = "encoder self-attention" },
    { suffix = "_decoder", heads = dh, hkey = "decoder_attention_heads", what = "decoder self-attention",
      causal = true },
    { suffix = "_cross", heads = dh, hkey = "decoder_attention_heads", what = "decoder cross-attention",
      padding = true },
  }
  for _, p in ipairs(parts) do
    local d = math.floor(hidden / p.heads)
    local raw = { heads_q = p.heads, head_dim = d, causal = p.causal, padding = p.padding, isa = opts.isa }
    local lines = {
      { key = "heads_q", value = num(p.heads), note = p.hkey },
      { key = "head_dim", value = num(d), note = ("%s / %s = %d / %d"):format(key, p.hkey, hidden, p.heads) },
    }
    if p.causal then lines[#lines + 1] = { key = "causal", value = "true", note = "the decoder is causal" } end
    if p.padding then
      lines[#lines + 1] = { key = "padding", value = "true", note = "per-sequence key lengths (padded batches)" }
    end
    result.configs[#result.configs + 1] = {
      suffix = p.suffix, raw = raw, lines = lines, origin = { heads_q = p.hkey, head_dim = key },
      what = p.what, description = describe(raw, nil, nil, p.suffix == "_cross"),
    }
  end
  return M.finish(result, opts, r)
end

--- The rel_bias line of a T5 self-attention config.
local function t5_rel_line(nb, md, bidir, nkey, mkey)
  return { key = "rel_bias", value = ("{ kind = \"t5\", buckets = %d, max_distance = %d, bidirectional = %s }")
    :format(nb, md, tostring(bidir)), pre = { ("%s and %s; %s"):format(nkey, mkey,
      bidir and "the encoder's buckets cover both directions" or "the decoder's count only keys before the query") } }
end

--- T5, Flan-T5 and mT5: encoder self-attention (bidirectional, T5's
-- relative position bias over both directions), decoder self-attention
-- (causal, the bias over past keys only) and the decoder's cross-attention
-- (no bias), all unscaled (T5 folds 1/sqrt(d_kv) into its query weights).
-- The bias table is each model's first layer's relative_attention_bias
-- weight [buckets][heads], passed at run time.
function M.import_t5(j, opts, r, result, family)
  result.label = family.label
  local err
  local function int_key(key, lo)
    local v = r.get(key)
    if v == nil then return r.fail(nil, ("no '%s' in this %s config"):format(key, family.label)) end
    return r.int(key, v, lo)
  end
  local heads, dkv, nb, md
  heads, err = int_key("num_heads", 1)
  if not heads then return nil, err end
  dkv, err = int_key("d_kv", 1)
  if not dkv then return nil, err end
  nb, err = int_key("relative_attention_num_buckets", 4)
  if not nb then return nil, err end
  md, err = int_key("relative_attention_max_distance", 1)
  if not md then return nil, err end
  for _, k in ipairs({ "d_model", "num_layers", "num_decoder_layers" }) do
    if not is_null(j[k]) then r.note(k, show(j[k])) end
  end
  local parts = {
    { suffix = "_encoder", what = "encoder self-attention", padding = true, bidir = true },
    { suffix = "_decoder", what = "decoder self-attention", causal = true, bidir = false },
    { suffix = "_cross", what = "decoder cross-attention", padding = true },
  }
  for _, p in ipairs(parts) do
    local raw = { heads_q = heads, head_dim = dkv, causal = p.causal, padding = p.padding, scale = 1, isa = opts.isa }
    local lines = {
      { key = "heads_q", value = num(heads), note = "num_heads" },
      { key = "head_dim", value = num(dkv), note = "d_kv" },
    }
    if p.causal then lines[#lines + 1] = { key = "causal", value = "true", note = "the decoder is causal" } end
    if p.padding then
      lines[#lines + 1] = { key = "padding", value = "true", note = "per-sequence key lengths (padded batches)" }
    end
    lines[#lines + 1] = { key = "scale", value = "1.0", note = "T5 does not scale its scores" }
    if p.bidir ~= nil then
      raw.rel_bias = { kind = "t5", buckets = nb, max_distance = md, bidirectional = p.bidir }
      lines[#lines + 1] = t5_rel_line(nb, md, p.bidir, "relative_attention_num_buckets",
        "relative_attention_max_distance")
    end
    local extra = p.bidir ~= nil and ("T5 relative position bias (%d buckets up to %d%s)")
      :format(nb, md, p.bidir and ", both directions" or ", past keys") or nil
    result.configs[#result.configs + 1] = {
      suffix = p.suffix, raw = raw, lines = lines,
      origin = { heads_q = "num_heads", head_dim = "d_kv", rel_bias = "relative_attention_num_buckets" },
      what = p.what, description = describe(raw, nil, extra, p.suffix == "_cross"),
    }
  end
  return M.finish(result, opts, r)
end

--- torch_dtype -> attngen storage type
local TORCH_DTYPES = { float32 = "f32", bfloat16 = "bf16", float16 = "f16" }

--- The storage type a --dtype choice gives for config.json j: "auto" reads
-- torch_dtype, a type name is taken as it is.  Returns dtype, note (the
-- comment of the config's line), or nil and a one-line error.
function M.dtype_of(j, choice, file)
  if choice == "f32" or choice == "bf16" or choice == "f16" then return choice, "--dtype" end
  if choice ~= "auto" then
    return nil, ("--dtype %s: give auto (from torch_dtype), f32, bf16 or f16"):format(json.quote(choice))
  end
  local t = j.torch_dtype
  if is_null(t) then
    return nil, ("%s: --dtype auto reads 'torch_dtype', which this config.json does not have; "
      .. "give --dtype f32, bf16 or f16"):format(file)
  end
  local d = type(t) == "string" and TORCH_DTYPES[t]
  if not d then
    return nil, ("%s: 'torch_dtype' is %s, which attngen cannot store (float32, bfloat16, float16); "
      .. "give --dtype f32, bf16 or f16"):format(file, show(t))
  end
  return d, ("torch_dtype %s"):format(show(t))
end

--- Names the configs, validates them against the schema and renders their
-- text.  Returns the result, or nil and a one-line error.
function M.finish(result, opts, r)
  local base = opts.name
  local names = {}
  for _, c in ipairs(result.configs) do
    c.name = base .. c.suffix
    names[#names + 1] = c.name
  end
  for _, c in ipairs(result.configs) do
    c.raw.name = c.name
    if opts.dtype then c.raw.dtype = opts.dtype end
    local cfg, bad, msg = schema.normalize(c.raw)
    if not cfg then
      if bad == "name" then return nil, ("--name %s: %s"):format(json.quote(base), msg) end
      if bad == "isa" then return nil, "--isa: " .. msg end
      local src = c.origin[bad]
      return r.fail(src, ("cannot import into attngen config '%s': %s%s"):format(c.name, msg,
        src and (" (from '" .. src .. "')") or ""))
    end
    c.cfg = cfg
    if opts.dtype then
      c.lines[#c.lines + 1] = { key = "dtype", value = ("%q"):format(opts.dtype), note = opts.dtype_note }
    end
    if opts.isa then
      c.lines[#c.lines + 1] = { key = "isa", value = luawriter.string_list(cfg.isa), note = "--isa" }
    end
    if #result.configs > 1 then
      local others = {}
      for _, n in ipairs(names) do
        if n ~= c.name then others[#others + 1] = n .. ".lua" end
      end
      c.siblings = others
    end
    c.text = luawriter.render(result, c, opts)
  end
  return result
end

return M
