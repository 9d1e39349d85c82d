--- attngen bench CONFIG: time the kernel of every ISA this CPU runs against
-- the naive reference.
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
  c:flag("--json", "Print JSON instead of a table.")
  c:flag("--no-reference", "Do not time the naive reference.")
  c:flag("--no-blas", "Do not time the unfused OpenBLAS baseline.")
  c:option("--blas-core", "OpenBLAS core for the baseline (default: the best for this CPU; 'keep': the environment's).")
end

function M.run(args)
  local argv = { "--batch", tostring(args.batch), "--seq-q", tostring(args.seq_q),
    "--seq-k", tostring(args.seq_k or args.seq_q), "--threads", tostring(args.threads) }
  tool.pass(argv, "--isa", args.isa)
  tool.pass(argv, "--kv-layout", args.kv_layout)
  tool.pass(argv, "--json", args.json)
  tool.pass(argv, "--no-reference", args.no_reference)
  tool.pass(argv, "--no-blas", args.no_blas)
  tool.pass(argv, "--blas-core", args.blas_core)
  return tool.run("bench", args, argv)
end

return M
