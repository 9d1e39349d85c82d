--- attngen rollout W1.npy ... WL.npy -o R.npy [--residual R] [--heads mean|max]:
-- attention rollout over per-layer weights in layer order (generator/rollout.lua).
local npy = require("npy")
local rollout = require("rollout")

local M = {}

function M.add_to_parser(parser)
  local c = parser:command("rollout", "Attention rollout (Abnar and Zuidema): per-layer weights "
    .. "[B][H][L][L] (as 'attngen run --weights' writes) or [B][L][L], in layer order, combined into "
    .. "R = A~_L ... A~_1 with A~ = r I + (1 - r) A, rows renormalized. Draw R with 'attngen plot weights'.")
  c:argument("weights", "Each layer's weights, a .npy file, first layer first."):args("+"):argname("W.npy")
  c:option("-o --output", "The rollout, f32 [B][L][L] .npy."):argname("R.npy"):count(1)
  c:option("--residual", "The weight r of the identity (the residual connection), from 0 to 1.", "0.5")
    :argname("R")
  c:option("--heads", "How heads are combined: mean or max.", "mean"):argname("mean|max")
end

function M.run(args)
  local r = tonumber(args.residual)
  if not r or r < 0 or r > 1 then
    return nil, ("--residual: expected a number from 0 to 1, got '%s'"):format(tostring(args.residual))
  end
  if not rollout.HEADS[args.heads] then
    return nil, ("--heads: expected mean or max, got '%s'"):format(tostring(args.heads))
  end
  for _, p in ipairs(args.weights) do
    if p == args.output then return nil, ("-o %s names an input: it would be overwritten"):format(p) end
  end
  local layers, shape = rollout.read_layers(args.weights)
  if not layers then return nil, shape end
  local values = rollout.rollout(layers, shape, args.heads, r)
  local ok, err = npy.write_f32(args.output, { shape.b, shape.l, shape.l }, values)
  if not ok then return nil, err end
  return 0
end

return M
