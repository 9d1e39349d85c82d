--- Hugging Face config.json -> attngen configs.  Reads the attention
-- settings of a model (heads, head dim, which layers use a sliding window,
-- logit soft-capping, score scale, causal or bidirectional) and renders
-- them as configs in the style of configs/*.lua, with a header naming the
-- source values.
--
-- Sliding windows.  transformers builds the mask of a sliding-window layer
-- in src/transformers/masking_utils.py (sliding_window_overlay): under the
-- causal mask, key k is kept for query q when q - k < W, i.e. the last W
-- keys including the current one; its FlashAttention path passes
-- window_size = (W - 1, 0) for the same band, since FlashAttention's
-- window_size counts keys besides the current one.  attngen's
-- sliding_window = W counts like transformers (DESIGN.md section 3:
-- window.left = W - 1), so W is carried over unchanged.  (The mask builder
-- transformers used before masking_utils, AttentionMaskConverter, kept
-- W + 1 keys; configs are read with the current semantics.)
local json = require("dkjson")
local schema = require("schema")

local M = {}

--- What a JSON null decodes to (absent keys are nil).
M.NULL = setmetatable({}, { __tostring = function() return "null" end })

local function is_null(v) return v == nil or v == M.NULL end

-- A string shown in a message or a comment: quoted, control characters
-- escaped, so that it can neither break a line nor end a comment.
local function show_str(s)
  return '"' .. tostring(s):gsub('[%c"\\]', function(c)
    if c == '"' or c == "\\" then return "\\" .. c end
    return ("\\%03d"):format(c:byte())
  end) .. '"'
end

--- A string with its control characters escaped (a line stays one line).
local function plain(s)
  return (tostring(s):gsub("%c", function(c) return ("\\%03d"):format(c:byte()) end))
end
M.plain = plain

--- A number as text, the same on every Lua: integers without a fraction
-- (with ".0" when `float`), others the shortest text that reads back.
local function num(v, float)
  if v == math.floor(v) and math.abs(v) < 2 ^ 53 then
    local s = ("%d"):format(v)
    return float and (s .. ".0") or s
  end
  for _, digits in ipairs({ 15, 16, 17 }) do
    local s = ("%." .. digits .. "g"):format(v)
    if tonumber(s) == v then return s end
  end
  return ("%.17g"):format(v)
end
M.num = num

local function is_list(t)
  local mt = getmetatable(t)
  if mt and mt.__jsontype then return mt.__jsontype == "array" end
  return t[1] ~= nil or next(t) == nil
end

--- A JSON value as it appears in a header line.
local function show(v)
  if v == nil then return "absent" end
  if v == M.NULL then return "null" end
  local t = type(v)
  if t == "number" then
    if v ~= v or v == math.huge or v == -math.huge then return tostring(v) end
    return num(v)
  end
  if t == "boolean" then return tostring(v) end
  if t == "string" then return show_str(v) end
  if is_list(v) then
    if #v <= 4 then
      local parts = {}
      for i, x in ipairs(v) do parts[i] = show(x) end
      return "[" .. table.concat(parts, ", ") .. "]"
    end
    return ("[%d entries]"):format(#v)
  end
  return "{...}"
end

--- Line and column of byte `pos` in `text`.
local function position(text, pos)
  pos = math.max(1, math.min(tonumber(pos) or 1, #text + 1))
  local line, start = 1, 1
  for nl in text:sub(1, pos - 1):gmatch("()\n") do
    line = line + 1
    start = nl + 1
  end
  return line, pos - start + 1
end

M.MAX_JSON_DEPTH = 256

--- Checks that `text` is one JSON value (RFC 8259) and nothing else.
-- dkjson accepts some malformed text (a missing comma or colon) and reads
-- something from it; a config.json with such a typo is refused instead.
-- Returns true, or nil, byte position, message.
local function check_syntax(text)
  local pos, depth = 1, 0
  local function fail(msg, at)
    error({ pos = at or pos, msg = msg }, 0)
  end
  local function ws() pos = text:find("[^ \t\r\n]", pos) or (#text + 1) end
  local function char() return text:sub(pos, pos) end
  local function str()
    local i = pos + 1
    while true do
      local c = text:find('["\\%c]', i)
      if not c then fail("unterminated string") end
      local ch = text:sub(c, c)
      if ch == '"' then
        pos = c + 1
        return
      elseif ch == "\\" then
        local e = text:sub(c + 1, c + 1)
        if e == "u" then
          if not text:sub(c + 2, c + 5):match("^%x%x%x%x$") then fail("bad \\u escape in a string", c) end
          i = c + 6
        elseif e ~= "" and ('"\\/bfnrt'):find(e, 1, true) then
          i = c + 2
        else
          fail("bad escape in a string", c)
        end
      else
        fail("control character in a string", c)
      end
    end
  end
  local function number()
    local p = pos
    if text:sub(p, p) == "-" then p = p + 1 end
    if text:sub(p, p) == "0" then
      p = p + 1
    elseif text:find("^[1-9]", p) then
      p = select(2, text:find("^%d+", p)) + 1
    else
      fail("no valid JSON value")
    end
    if text:sub(p, p) == "." then
      local _, e = text:find("^%d+", p + 1)
      if not e then fail("digits expected after '.'", p) end
      p = e + 1
    end
    if text:find("^[eE]", p) then
      local _, e = text:find("^[-+]?%d+", p + 1)
      if not e then fail("digits expected in the exponent", p) end
      p = e + 1
    end
    pos = p
  end
  local value
  local function container(close, member)
    depth = depth + 1
    if depth > M.MAX_JSON_DEPTH then fail("nested too deeply") end
    pos = pos + 1
    ws()
    if char() == close then
      pos = pos + 1
    else
      while true do
        member()
        ws()
        local c = char()
        if c == close then
          pos = pos + 1
          break
        elseif c == "," then
          pos = pos + 1
        else
          fail(("',' or '%s' expected"):format(close))
        end
      end
    end
    depth = depth - 1
  end
  local function member()
    ws()
    if char() ~= '"' then fail("a quoted key expected") end
    str()
    ws()
    if char() ~= ":" then fail("':' expected after the key") end
    pos = pos + 1
    value()
  end
  value = function()
    ws()
    local c = char()
    if c == "{" then container("}", member)
    elseif c == "[" then container("]", value)
    elseif c == '"' then str()
    elseif text:find("^true", pos) then pos = pos + 4
    elseif text:find("^false", pos) then pos = pos + 5
    elseif text:find("^null", pos) then pos = pos + 4
    elseif c == "" then fail("no JSON value (the text ends)")
    else number() end
  end
  local ok, e = pcall(function()
    value()
    ws()
    if pos <= #text then fail("unexpected text after the top-level value") end
  end)
  if ok then return true end
  if type(e) == "table" then return nil, e.pos, e.msg end
  return nil, pos, tostring(e)
end

--- Decodes the text of a config.json.  Returns the top-level object, or
-- nil and a one-line "file:line: invalid JSON: ..." message.
function M.decode(text, file)
  if text:sub(1, 3) == "\239\187\191" then text = text:sub(4) end -- a UTF-8 byte order mark
  local good, at, why = check_syntax(text)
  if not good then
    local line, col = position(text, at)
    return nil, ("%s:%d: invalid JSON: %s (column %d)"):format(file, line, why:gsub("%s*\n%s*", " "), col)
  end
  local ok, obj, _, msg = pcall(json.decode, text, 1, M.NULL)
  if not ok or obj == nil then
    return nil, ("%s: invalid JSON: %s"):format(file, (tostring(ok and msg or obj):gsub("%s*\n%s*", " ")))
  end
  if type(obj) ~= "table" or is_list(obj) then
    return nil, ("%s:1: a config.json holds a JSON object ({...}), got %s"):format(file,
      type(obj) == "table" and "an array" or show(obj))
  end
  return obj
end

--- Line of the first `"key":` in a JSON text, or nil.
local function line_of(text, key)
  if not text then return nil end
  local at = text:find('"' .. key:gsub("%p", "%%%0") .. '"%s*:')
  if not at then return nil end
  return (position(text, at))
end

-- Families.  role: "decoder" (causal), "text_encoder" (bidirectional,
-- padded batches), "vision_encoder" (bidirectional, fixed length).
-- window: how sliding_window applies when there is no layer_types list:
-- "all" every layer, "qwen2" layers from max_window_layers on when
-- use_sliding_window, "alternate" even layers (Gemma-2), nil ignored.
-- defaults: the values transformers' config class uses for absent keys.
local FAMILIES = {
  llama = { label = "Llama", role = "decoder" },
  mistral = { label = "Mistral", role = "decoder", window = "all", defaults = { sliding_window = 4096 } },
  mixtral = { label = "Mixtral", role = "decoder", window = "all" },
  qwen2 = { label = "Qwen2", role = "decoder", window = "qwen2",
    defaults = { use_sliding_window = false, sliding_window = 4096, max_window_layers = 28, num_hidden_layers = 32 } },
  gemma = { label = "Gemma", role = "decoder", defaults = { head_dim = 256 } },
  gemma2 = { label = "Gemma-2", role = "decoder", window = "alternate",
    defaults = { head_dim = 256, sliding_window = 4096, attn_logit_softcapping = 50, query_pre_attn_scalar = 256,
      num_hidden_layers = 26 } },
  phi3 = { label = "Phi-3", role = "decoder", window = "all" },
  falcon = { label = "Falcon", role = "decoder", kv = "falcon" },
  RefinedWebModel = { label = "Falcon", role = "decoder", kv = "falcon" },
  RefinedWeb = { label = "Falcon", role = "decoder", kv = "falcon", defaults = { new_decoder_architecture = true } },
  bloom = { label = "BLOOM", role = "decoder", alibi = true },
  gpt2 = { label = "GPT-2", role = "decoder" },
  bert = { label = "BERT", role = "text_encoder" },
  roberta = { label = "RoBERTa", role = "text_encoder" },
  ["xlm-roberta"] = { label = "XLM-RoBERTa", role = "text_encoder" },
  vit = { label = "ViT", role = "vision_encoder" },
  whisper = { label = "Whisper", role = "encoder_decoder" },
}

--- The model_type values import-hf knows, sorted.
function M.families()
  local names = {}
  for k in pairs(FAMILIES) do names[#names + 1] = k end
  table.sort(names)
  return names
end

local HEADS_KEYS = { "num_attention_heads", "n_head", "n_heads" }
local HIDDEN_KEYS = { "hidden_size", "n_embd", "d_model" }

--- Layer indices (0-based, ascending) in a short form: "0, 2, ..., 40",
-- "28-31", or a list with runs.
local function layer_list(idx)
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
M.layer_list = layer_list

--- A C identifier made from a file or folder name: "Meta-Llama-3-8B" ->
-- "meta_llama_3_8b".  Returns nil when nothing usable is left.
function M.identifier(s)
  s = tostring(s or ""):lower():gsub("[^%w_]", "_"):gsub("_+", "_"):gsub("^_", ""):gsub("_$", "")
  if s == "" then return nil end
  if s:match("^%d") then s = "m_" .. s end
  return (s:sub(1, 56):gsub("_$", ""))
end

-- The reader of one config.json: values by key with the family's defaults,
-- each use recorded for the header, errors located at the key's line.
local function reader(j, opts, family)
  local r = { used = {}, seen = {} }
  local defaults = family and family.defaults or {}

  function r.where(key)
    local line = key and line_of(opts.text, key)
    if line then return ("%s:%d: "):format(opts.file, line) end
    return opts.file .. ": "
  end

  function r.fail(key, msg) return nil, r.where(key) .. msg end

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

--- Which layers are sliding: returns a list of booleans (1-based by
-- layer; { all = true } when every layer is) and the window W (or nil),
-- or nil, nil, err.
local function layer_kinds(j, r, family)
  local types = j.layer_types
  local sw_key = "sliding_window"
  if not is_null(types) then
    if type(types) ~= "table" or not is_list(types) or #types == 0 then
      return nil, nil, r.where("layer_types") .. ("'layer_types' must be a list of \"full_attention\" or "
        .. "\"sliding_attention\", got %s"):format(show(types))
    end
    local sliding, n_sliding = {}, 0
    for i, t in ipairs(types) do
      if t == "sliding_attention" then
        sliding[i] = true
        n_sliding = n_sliding + 1
      elseif t == "full_attention" then
        sliding[i] = false
      else
        return nil, nil, r.where("layer_types") .. ("'layer_types' entry %d is %s; import-hf reads "
          .. "\"full_attention\" and \"sliding_attention\""):format(i - 1, show(t))
      end
    end
    local nl = j.num_hidden_layers
    if type(nl) == "number" and nl ~= #types then
      return nil, nil, r.where("layer_types") .. ("'layer_types' has %d entries but 'num_hidden_layers' is %s")
        :format(#types, show(nl))
    end
    r.note("layer_types", ("[%d entries]"):format(#types),
      ("%d sliding_attention, %d full_attention"):format(n_sliding, #types - n_sliding))
    local w
    if n_sliding > 0 then
      if family and family.window == "qwen2" then
        local use = r.get("use_sliding_window")
        local err
        use, err = r.bool("use_sliding_window", use)
        if err then return nil, nil, err end
        if not use then
          return nil, nil, r.where("layer_types") .. "'layer_types' has sliding_attention layers but "
            .. "'use_sliding_window' is not true, so transformers gives them no window"
        end
      end
      w = r.get(sw_key)
      if is_null(w) then
        return nil, nil, r.where("layer_types") .. "'layer_types' has sliding_attention layers but "
          .. "'sliding_window' is null or absent"
      end
    else
      r.get(sw_key, "no layer uses it")
    end
    return sliding, w
  end

  local rule = family and family.window or (family == nil and "all") or nil
  if rule == nil then
    local v = j[sw_key]
    if not is_null(v) then
      r.note(sw_key, show(v), ("ignored: %s models have no sliding window"):format(family.label))
    end
    return {}, nil
  end
  local err
  if rule == "qwen2" then
    local use = r.get("use_sliding_window")
    use, err = r.bool("use_sliding_window", use)
    if err then return nil, nil, err end
    if not use then
      if j[sw_key] ~= nil then r.note(sw_key, show(j[sw_key]), "not used: use_sliding_window is not true") end
      return {}, nil
    end
  end
  local w = r.get(sw_key)
  if is_null(w) then return {}, nil end
  w, err = r.int(sw_key, w, 1)
  if err then return nil, nil, err end

  if rule == "all" then return { all = true }, w end

  local n = r.get("num_hidden_layers")
  n, err = r.int("num_hidden_layers", n, 1)
  if err then return nil, nil, err end
  local sliding = {}
  if rule == "alternate" then
    for i = 1, n do sliding[i] = (i - 1) % 2 == 0 end
    r.note("layer pattern", "", "no 'layer_types': Gemma-2 alternates, sliding window on even layers")
    return sliding, w
  end
  -- qwen2, with use_sliding_window
  local first = r.get("max_window_layers", "layers from this index on use the window")
  first, err = r.int("max_window_layers", first, 0)
  if err then return nil, nil, err end
  for i = 1, n do sliding[i] = (i - 1) >= first end
  return sliding, w
end

--- Splits layers into variants: returns { {suffix, window, layers} ... }.
local function variants_of(sliding, w)
  if sliding.all then return { { suffix = "", window = w } } end
  local loc, glob = {}, {}
  for i, s in ipairs(sliding) do
    if s then loc[#loc + 1] = i - 1 else glob[#glob + 1] = i - 1 end
  end
  local total = #loc + #glob
  if #loc > 0 and #glob > 0 then
    return {
      { suffix = "_local", window = w, layers = loc, total = total },
      { suffix = "_global", layers = glob, total = total },
    }
  end
  if #loc > 0 then return { { suffix = "", window = w } } end
  return { { suffix = "" } }
end

--- Causal or not, for a model_type import-hf does not know: from the
-- architectures' class names.  Returns role, reason or nil.
local function role_from_architectures(archs)
  if type(archs) ~= "table" then return nil end
  for _, a in ipairs(archs) do
    if type(a) == "string" and (a:match("ForCausalLM$") or a:match("LMHeadModel$")) then
      return "decoder", plain(a) .. " is a causal decoder"
    end
  end
  for _, a in ipairs(archs) do
    if type(a) == "string" and a:match("ForMaskedLM$") then
      return "text_encoder", plain(a) .. " is a bidirectional encoder"
    end
    if type(a) == "string" and a:match("ForImageClassification$") then
      return "vision_encoder", plain(a) .. " is a bidirectional encoder"
    end
  end
  return nil
end

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
  if raw.softcap then parts[#parts + 1] = ("logit softcap %s"):format(num(raw.softcap)) end
  if raw.alibi then parts[#parts + 1] = "ALiBi" end
  if raw.padding then parts[#parts + 1] = "padded batches (per-sequence key lengths)" end
  if extra then parts[#parts + 1] = extra end
  return table.concat(parts, ", ")
end

--- Reads a decoded config.json.  opts: file (the path shown), text (the
-- JSON text, to locate keys), name (base name of the configs), isa (a
-- list or nil), command (the command line shown in the header).
-- Returns { model_type, label, used, notes, configs = { {name, raw,
-- lines, description, layers_note} } }, or nil and a one-line error.
function M.import(j, opts)
  local mt = j.model_type
  local family = type(mt) == "string" and FAMILIES[mt] or nil
  local mt_shown = is_null(mt) and "(no 'model_type')" or ("model_type " .. show(mt))
  local r = reader(j, opts, family)
  local result = { model_type = mt, used = r.used, notes = {}, configs = {} }
  if not is_null(mt) and type(mt) ~= "string" then
    return r.fail("model_type", ("'model_type' must be a string, got %s"):format(show(mt)))
  end
  r.note("model_type", show(mt))
  if not is_null(j.architectures) then r.note("architectures", show(j.architectures)) end

  if family and family.role == "encoder_decoder" then return M.import_whisper(j, opts, r, result) end

  -- role: decoder or encoder
  local role, role_note
  if family then
    role = family.role
    result.label = family.label
  else
    role, role_note = role_from_architectures(j.architectures)
  end

  -- query heads
  local hkey, heads = r.first(HEADS_KEYS)
  if not hkey then
    if not family then
      return r.fail(nil, ("%s is not a family import-hf knows (%s) and there is no "
        .. "'num_attention_heads' to read"):format(mt_shown, table.concat(M.families(), ", ")))
    end
    return r.fail(nil, ("no 'num_attention_heads' (nor n_head, n_heads) in this %s config"):format(family.label))
  end
  local err
  heads, err = r.int(hkey, heads, 1)
  if err then return nil, err end
  r.note(hkey, show(j[hkey]))
  local origin = { heads_q = hkey }

  if not family then
    if not role then
      return r.fail(nil, ("%s is not a family import-hf knows (%s), and its 'architectures' "
        .. "do not say whether it is causal (a ...ForCausalLM or ...ForMaskedLM class)")
        :format(mt_shown, table.concat(M.families(), ", ")))
    end
    local a = j.alibi
    if a == true or j.position_embedding_type == "alibi"
      or (type(j.attn_config) == "table" and j.attn_config.alibi == true) then
      return r.fail(nil, ("%s uses ALiBi in a way import-hf does not know; write the config by hand")
        :format(mt_shown))
    end
    result.notes[#result.notes + 1] = ("%s is not a family import-hf knows: read with the "
      .. "common keys; %s."):format(mt_shown, role_note)
    result.label = type(mt) == "string" and plain(mt) or "model"
  end

  -- key/value heads
  local kv, kv_note
  if family and family.kv == "falcon" then
    local new_arch = r.get("new_decoder_architecture")
    new_arch, err = r.bool("new_decoder_architecture", new_arch)
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
        kv, err = r.int(key, v, 1)
        if err then return nil, err end
        r.note(key, show(v))
        origin.heads_kv = key
      else
        kv, kv_note = heads, "no num_kv_heads: one KV head per query head"
      end
    else
      kv, kv_note = 1, "multi_query: one KV head (MQA)"
      origin.heads_kv = "multi_query"
    end
  else
    local key, v = r.first({ "num_key_value_heads", "num_kv_heads" })
    if key then
      kv, err = r.int(key, v, 1)
      if err then return nil, err end
      r.note(key, show(v))
      origin.heads_kv = key
    elseif j.multi_query == true then
      kv, kv_note = 1, "multi_query: one KV head (MQA)"
      r.note("multi_query", "true")
      origin.heads_kv = "multi_query"
    else
      kv, kv_note = heads, "MHA: one KV head per query head"
      r.note("num_key_value_heads", show(j.num_key_value_heads), "MHA: one KV head per query head")
    end
  end

  -- head dim
  local head_dim, hd_note
  if not is_null(j.head_dim) then
    head_dim, err = r.int("head_dim", j.head_dim, 1)
    if err then return nil, err end
    r.note("head_dim", show(j.head_dim))
    hd_note = "head_dim"
    origin.head_dim = "head_dim"
  elseif family and family.defaults and family.defaults.head_dim then
    head_dim = family.defaults.head_dim
    r.note("head_dim", show(j.head_dim), ("%s default: %d"):format(family.label, head_dim))
    hd_note = ("%s default head_dim"):format(family.label)
  else
    local key, hidden = r.first(HIDDEN_KEYS)
    if not key then
      return r.fail(nil, ("no 'head_dim' and no 'hidden_size' (nor n_embd, d_model) to derive it from"))
    end
    hidden, err = r.int(key, hidden, 1)
    if err then return nil, err end
    r.note(key, show(j[key]))
    if hidden % heads ~= 0 then
      return r.fail(key, ("'%s' (%d) is not divisible by '%s' (%d) and there is no 'head_dim'")
        :format(key, hidden, hkey, heads))
    end
    head_dim = math.floor(hidden / heads)
    hd_note = ("%s / %s = %d / %d"):format(key, hkey, hidden, heads)
    origin.head_dim = key
  end

  -- causal (the note is the comment on the causal line)
  local causal, padding, causal_note = false, false, nil
  if role == "decoder" then
    causal = true
    causal_note = family and (result.label .. " is a causal decoder") or role_note
    local bidir = j.use_bidirectional_attention
    if not is_null(bidir) and bidir ~= false then
      if bidir ~= true then
        return r.fail("use_bidirectional_attention", ("'use_bidirectional_attention' = %s is not something "
          .. "import-hf reads (true or false)"):format(show(bidir)))
      end
      r.note("use_bidirectional_attention", "true")
      causal = false
    end
  elseif role == "text_encoder" then
    local dec = j.is_decoder
    if not is_null(dec) then
      r.note("is_decoder", show(dec))
      dec, err = r.bool("is_decoder", dec)
      if err then return nil, err end
    end
    if dec then
      causal, causal_note = true, "is_decoder = true"
    else
      padding = true
    end
  end

  -- score scale, soft-capping, ALiBi
  local raw_scale, scale_note
  local qpas = r.get("query_pre_attn_scalar")
  if not is_null(qpas) then
    qpas, err = r.positive("query_pre_attn_scalar", qpas)
    if err then return nil, err end
    local root = math.sqrt(qpas)
    if root == math.floor(root) then
      raw_scale = { expr = "1 / " .. num(root), value = 1 / root }
    else
      raw_scale = { expr = "1 / math.sqrt(" .. num(qpas) .. ")", value = 1 / root }
    end
    scale_note = ("1 / sqrt(query_pre_attn_scalar), query_pre_attn_scalar = %s"):format(num(qpas))
    origin.scale = "query_pre_attn_scalar"
  end
  if mt == "gpt2" then
    local saw = j.scale_attn_weights
    if saw ~= nil then
      r.note("scale_attn_weights", show(saw))
      saw, err = r.bool("scale_attn_weights", saw)
      if err then return nil, err end
      if saw == false then
        raw_scale = { expr = "1.0", value = 1 }
        scale_note = "scale_attn_weights = false: scores are not scaled"
      end
    end
    if j.scale_attn_by_inverse_layer_idx == true then
      return r.fail("scale_attn_by_inverse_layer_idx", "'scale_attn_by_inverse_layer_idx' = true scales each "
        .. "layer differently; attngen configs have one scale (import with it false and set 'scale' per layer)")
    end
  end
  local softcap = r.get("attn_logit_softcapping")
  if not is_null(softcap) then
    softcap, err = r.positive("attn_logit_softcapping", softcap)
    if err then return nil, err end
  else
    softcap = nil
  end
  local alibi = false
  if family and family.alibi then
    alibi = true
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

  -- layers: which use a sliding window
  local sliding, w, lerr = layer_kinds(j, r, family)
  if not sliding then return nil, lerr end
  if w then
    w, err = r.int("sliding_window", w, 1)
    if err then return nil, err end
  end
  local vs = variants_of(sliding, w)
  if not causal then
    for _, v in ipairs(vs) do
      if v.window then
        return r.fail("sliding_window", "a bidirectional model with sliding-window layers: import-hf reads "
          .. "sliding windows of causal models only; write window = {left = ..., right = ...} by hand")
      end
    end
  end

  for _, v in ipairs(vs) do
    local raw = {
      heads_q = heads,
      heads_kv = kv ~= heads and kv or nil,
      head_dim = head_dim,
      causal = causal or nil,
      sliding_window = v.window,
      padding = padding or nil,
      softcap = softcap,
      alibi = alibi or nil,
      isa = opts.isa,
    }
    if raw_scale then raw.scale = raw_scale.value end
    local lines = {
      { key = "heads_q", value = num(heads), note = hkey },
    }
    if raw.heads_kv then
      lines[#lines + 1] = { key = "heads_kv", value = num(kv), note = kv_note or origin.heads_kv }
    end
    lines[#lines + 1] = { key = "head_dim", value = num(head_dim), note = hd_note }
    if causal then lines[#lines + 1] = { key = "causal", value = "true", note = causal_note } end
    if v.window then
      lines[#lines + 1] = { key = "sliding_window", value = num(v.window), pre = M.window_comment(v.window) }
    end
    if padding then
      lines[#lines + 1] = { key = "padding", value = "true", note = "per-sequence key lengths (padded batches)" }
    end
    if softcap then
      lines[#lines + 1] = { key = "softcap", value = num(softcap, true), note = "attn_logit_softcapping" }
    end
    if raw_scale then lines[#lines + 1] = { key = "scale", value = raw_scale.expr, note = scale_note } end
    if alibi then lines[#lines + 1] = { key = "alibi", value = "true" } end
    local c = { suffix = v.suffix, raw = raw, lines = lines, window = v.window, origin = origin }
    c.what = "attention"
    if v.layers then c.what = v.window and "sliding-window layers" or "full-attention layers" end
    c.description = describe(raw, v.window, role == "vision_encoder" and "fixed-length inputs" or nil)
    if v.layers then
      c.layers_note = ("%s layers: %d of %d (%s)"):format(v.window and "Sliding-window" or "Full-attention",
        #v.layers, v.total, layer_list(v.layers))
    end
    result.configs[#result.configs + 1] = c
  end
  return M.finish(result, opts, r)
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
    local cfg, bad, msg = schema.normalize(c.raw)
    if not cfg then
      if bad == "name" then return nil, ("--name %s: %s"):format(show_str(base), msg) end
      if bad == "isa" then return nil, "--isa: " .. msg end
      local src = c.origin[bad]
      return r.fail(src, ("cannot import into attngen config '%s': %s%s"):format(c.name, msg,
        src and (" (from '" .. src .. "')") or ""))
    end
    c.cfg = cfg
    if opts.isa then
      c.lines[#c.lines + 1] = { key = "isa", value = "{ " .. table.concat((function()
        local q = {}
        for i, n in ipairs(cfg.isa) do q[i] = show_str(n) end
        return q
      end)(), ", ") .. " }", note = "--isa" }
    end
    if #result.configs > 1 then
      local others = {}
      for _, n in ipairs(names) do
        if n ~= c.name then others[#others + 1] = n .. ".lua" end
      end
      c.siblings = others
    end
    c.text = M.render(result, c, opts)
  end
  return result
end

--- The text of one config file.
function M.render(result, c, opts)
  local out = {}
  local function add(s) out[#out + 1] = s end
  add(("-- %s: %s %s: %s."):format(c.name, result.label, c.what, c.description))
  local arch = ""
  if type(result.used) == "table" then
    for _, u in ipairs(result.used) do
      if u.key == "architectures" then arch = ", architectures " .. u.shown end
    end
  end
  add(("-- Imported from %s (model_type %s%s) by"):format(show_str(opts.file), show(result.model_type), arch))
  add("--   " .. plain(opts.command))
  if c.layers_note then add("-- " .. c.layers_note .. ".") end
  if c.siblings then add("-- The model's other attention: " .. table.concat(c.siblings, ", ") .. ".") end
  for _, n in ipairs(result.notes) do add("-- " .. n) end
  add("-- Source values used:")
  for _, u in ipairs(result.used) do
    if u.key ~= "model_type" and u.key ~= "architectures" then
      local s = "--   " .. u.key
      if u.shown ~= "" then s = s .. " = " .. u.shown end
      if u.note then s = s .. (u.shown ~= "" and " (" .. u.note .. ")" or ": " .. u.note) end
      add(s)
    end
  end
  add("return {")
  add(("  name = %s,"):format(show_str(c.name)))
  for _, l in ipairs(c.lines) do
    for _, p in ipairs(l.pre or {}) do add("  -- " .. p) end
    add(("  %s = %s,%s"):format(l.key, l.value, l.note and (" -- " .. l.note) or ""))
  end
  add("}")
  return table.concat(out, "\n") .. "\n"
end

return M
