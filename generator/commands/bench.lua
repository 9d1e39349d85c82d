--- attngen bench CONFIG: time the kernel of every ISA this CPU runs against
-- the naive reference and an unfused OpenBLAS baseline (additive and luong
-- configs too: their decoder-step shapes and tanh loop rate, in the tool;
-- sdpa configs with --append: the store of new rows alone).
local tool = require("commands.tool")

local M = {}

function M.add_to_parser(parser)
  local c = parser:command("bench", "Time CONFIG's kernel (every ISA this CPU runs) and the naive reference.")
  tool.common_options(c)
  c:option("--batch", "Batch size.", "1"):convert(tonumber)
  c:option("--seq-q", "Query rows.", "512"):convert(tonumber)
  c:option("--seq-k", "Keys (default: --seq-q)."):convert(tonumber)
  c:option("--threads", "Threads (0: OpenMP's default).", "1"):convert(tonumber)
  c:option("--isa", "Time only this ISA variant.")
  c:option("--kv-layout", "K and V as bshd ([B][L][H][D], the default) or bhsd ([B][H][L][D], head-major).")
    :choices({ "bshd", "bhsd" })
  c:option("--paged", "Sdpa configs: K and V in pools of pages of P keys through a shuffled block table "
    .. "(the config with paged = {page = P}; order HND with --kv-layout bhsd, else NHD).")
    :argname("P")
  c:option("--append", "Sdpa configs: time attn_<name>_append alone, N new rows a sequence stored into a cache "
    .. "of --seq-k keys (default N; contiguous, or paged with --paged), against the copy bandwidth.")
    :argname("N")
  c:flag("--json", "Print JSON instead of a table.")
  c:flag("--no-reference", "Do not time the naive reference.")
  c:flag("--no-blas", "Do not time the unfused OpenBLAS baseline.")
  c:option("--blas-core", "OpenBLAS core for the baseline (default: the best for this CPU; 'keep': the environment's).")
  c:flag("--precomputed-u", "Additive configs: pass U = H W_h^T precomputed, as a decoder's steps do (the default).")
  c:flag("--no-precomputed-u", "Additive configs: pass W_h instead; the kernel projects H in every call.")
  c:flag("--no-tanh-rate", "Additive and luong concat configs: do not time the tanh loop's rate.")
end

function M.run(args)
  if args.paged then -- the config with paged = {page = P, order}
    local p = tonumber(args.paged)
    if not p or p ~= math.floor(p) or p < 1 or p > 2 ^ 20 then
      return nil, ("--paged: expected an integer in 1..1048576 (keys a page), got '%s'"):format(args.paged)
    end
    local set = {}
    for _, kv in ipairs(args.set or {}) do set[#set + 1] = kv end
    set[#set + 1] = ('paged={page=%d,order="%s"}'):format(p, args.kv_layout == "bhsd" and "HND" or "NHD")
    args.set = set
  end
  if args.append then
    local n = tonumber(args.append)
    if not n or n ~= math.floor(n) or n < 1 or n > 2 ^ 24 then
      return nil, ("--append: expected an integer in 1..16777216 (new rows a sequence), got '%s'"):format(args.append)
    end
  end
  local argv = { "--batch", tostring(args.batch), "--seq-q", tostring(args.seq_q),
    "--seq-k", tostring(args.seq_k or args.append or args.seq_q), "--threads", tostring(args.threads) }
  tool.pass(argv, "--append", args.append)
  tool.pass(argv, "--isa", args.isa)
  tool.pass(argv, "--kv-layout", args.kv_layout)
  tool.pass(argv, "--json", args.json)
  tool.pass(argv, "--no-reference", args.no_reference)
  tool.pass(argv, "--no-blas", args.no_blas)
  tool.pass(argv, "--blas-core", args.blas_core)
  if args.precomputed_u and args.no_precomputed_u then
    return nil, "--precomputed-u and --no-precomputed-u: give one of them"
  end
  tool.pass(argv, "--precomputed-u", args.precomputed_u)
  tool.pass(argv, "--no-precomputed-u", args.no_precomputed_u)
  tool.pass(argv, "--no-tanh-rate", args.no_tanh_rate)
  return tool.run("bench", args, argv)
end

return M
