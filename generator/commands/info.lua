--- attngen info CONFIG [--d-model N] [--seq N] [--json]: the parameters of
-- the block's projections, the KV cache's bytes per token and layer in every
-- storage type, and the FLOPs of one token (generator/info.lua).
local info = require("info")
local presets = require("presets")

local M = {}

function M.add_to_parser(parser)
  local c = parser:command("info", "What CONFIG's attention block costs: projection parameters, "
    .. "KV-cache bytes per token, FLOPs per token.")
  c:argument("config", "Config file or preset name.")
  c:option("--set", "Override a config key: key=value (a Lua literal); repeatable."):count("*")
  c:option("--d-model", "The model width the projections map from and to (default: heads_q x head_dim)."):argname("N")
  c:option("--seq", "The context length for the FLOPs of one token.", "4096"):argname("N")
  c:flag("--json", "Print one JSON object instead of the table.")
end

--- A whole number >= 1 from an option's text, or nil and the error.
local function positive(text, flag)
  local n = tonumber(text)
  if not n or n ~= math.floor(n) or n < 1 or n > 2 ^ 40 then
    return nil, ("%s: expected a whole number from 1 to 2^40, got '%s'"):format(flag, tostring(text))
  end
  return n
end

local function print_table(r, display)
  local g = info.grouped
  print(("%s: %s, %d query heads, %d kv head%s, head dims %d / %d"):format(display, r.kind, r.heads_q,
    r.heads_kv, r.heads_kv == 1 and "" or "s", r.head_dim, r.head_dim_v))
  print(("projections at d_model %s"):format(g(r.d_model)))
  for _, name in ipairs({ "q", "k", "v", "o" }) do
    local p = r.params[name]
    print(("  %s  %15s weights  %9s bias"):format(name:upper(), g(p.weights), g(p.bias)))
  end
  print(("  parameters  %s with biases, %s without"):format(g(r.params.with_bias), g(r.params.without_bias)))
  for _, t in ipairs(r.tables) do
    print(("  %s  %s learned values (%s), besides the projections"):format(t.name, g(t.count), t.note))
  end
  if r.kv_cache then
    print(r.shared_kv and "KV cache per token and layer (one row of head_dim values: K, and V its first head_dim_v)"
      or "KV cache per token and layer (K and V)")
    for _, c in ipairs(r.kv_cache) do
      local bytes = c.per_token and (g(c.per_token) .. " bytes") or "- (head dims not multiples of 32)"
      print(("  %-5s %s"):format(c.name, bytes))
    end
  else
    print(("state per sequence and layer (S and z, f32): %s bytes; no KV cache"):format(g(r.state_bytes)))
  end
  local f = r.flops_per_token
  print(("FLOPs per token at %s keys: attention %s, projections %s, total %s"):format(g(r.seq), g(f.attention),
    g(f.projections), g(f.total)))
end

--- The report as one JSON object, keys in a fixed order; a storage type
-- that cannot hold the head dims has "per_token": null.
local function json_text(r)
  local json = require("dkjson")
  for _, c in ipairs(r.kv_cache or {}) do
    if c.per_token == nil then c.per_token = json.null end
  end
  return json.encode(r, { keyorder = { "name", "kind", "heads_q", "heads_kv", "head_dim", "head_dim_v",
    "shared_kv", "d_model", "params", "q", "k", "v", "o", "weights", "bias", "with_bias", "without_bias",
    "tables", "count", "note", "kv_cache",
    "per_token", "state_bytes", "seq", "flops_per_token", "attention", "projections", "total" } })
end

function M.run(args)
  local cfg, display = presets.load(args.config, args.set)
  if not cfg then return nil, display end
  local d_model, n, err
  if args.d_model then
    d_model, err = positive(args.d_model, "--d-model")
    if not d_model then return nil, err end
  end
  n, err = positive(args.seq, "--seq")
  if not n then return nil, err end
  local r, rerr = info.describe(cfg, d_model, n)
  if not r then return nil, rerr end
  if args.json then
    print(json_text(r))
  else
    print_table(r, display)
  end
  return 0
end

return M
