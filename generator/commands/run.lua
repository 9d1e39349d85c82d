--- attngen run CONFIG --q Q.npy --k K.npy --v V.npy ... -o O.npy (sdpa, linear), or
-- --s S.npy --h H.npy and the parameters ... -o C.npy (additive, luong)
local tool = require("commands.tool")

local M = {}

function M.add_to_parser(parser)
  local c = parser:command("run", "Run the kernel of CONFIG on .npy tensors (BSHD, f32 or f64).")
  tool.common_options(c)
  -- sdpa and linear configs: --q, --k, --v; additive and luong: --s, --h and
  -- the parameters their score reads (the tool says which are required)
  c:option("--q", "Queries [B][Lq][Hq][D] (sdpa, linear; with --random-inputs: where to write them)."):argname("Q.npy")
  c:option("--k", "Keys [B][Lk][Hkv][D] (sdpa, linear; with --random-inputs: where to write them)."):argname("K.npy")
  c:option("--v", "Values [B][Lk][Hkv][Dv] (sdpa, linear; with --random-inputs: where to write them; "
    .. "not with shared_kv = true, whose V is the first Dv values of each K row).")
    :argname("V.npy")
  c:option("--random-inputs", "Sdpa, linear: draw Q, K and V N(0,1) from SEED (the runtime's generator) "
    .. "instead of reading them; needs --seq-q and --seq-k."):argname("SEED")
  c:option("--seq-q", "With --random-inputs: query rows."):argname("N")
  c:option("--seq-k", "With --random-inputs: keys."):argname("M")
  c:option("--batch", "With --random-inputs: batch (default 1)."):argname("B")
  c:option("--s", "Additive and luong configs: decoder states S [B][Lq][query_dim]."):argname("S.npy")
  c:option("--h", "Additive and luong configs: encoder states H [B][Lk][key_dim] (keys and values).")
    :argname("H.npy")
  c:option("--w-s", "Additive: W_s [attn_dim][query_dim]."):argname("W.npy")
  c:option("--w-h", "Additive: W_h [attn_dim][key_dim] (or --u)."):argname("W.npy")
  c:option("--u", "Additive: U = H W_h^T [B][Lk][attn_dim], precomputed (replaces --w-h)."):argname("U.npy")
  c:option("--w", "Luong general: W [key_dim][query_dim]; concat: W [attn_dim][key_dim + query_dim].")
    :argname("W.npy")
  c:option("--v-attn", "Additive and luong concat: v [attn_dim]."):argname("V.npy")
  c:option("--b", "Additive and luong concat with bias = true: b [attn_dim]."):argname("B.npy")
  c:option("--seqlens-k", "int32 [B] valid key lengths (configs with padding)."):argname("S.npy")
  c:option("--mask", "bool/uint8 keep-mask or f32 bias, [Lq][Lk] or [B|1][Hq|1][Lq][Lk] "
    .. "(additive, luong: [B|1][Lq][Lk])."):argname("M.npy")
  c:option("--rel-table", "Configs with rel_bias: the learned relative position table [rows][Hq] f32 "
    .. "(rows: T5's buckets, or 2 max_distance + 1)."):argname("T.npy")
  c:option("-o --output", "Output O [B][Lq][Hq][Dv] (additive, luong: the context C [B][Lq][key_dim]).")
    :argname("O.npy"):count(1)
  c:option("--lse", "Also write LSE [B][Hq][Lq] f32."):argname("L.npy")
  c:option("--weights", "Also write the attention weights [B][Hq][Lq][Lk] f32 (configs with weights = true; "
    .. "additive, luong: [B][Lq][Lk], any config).")
    :argname("W.npy")
  c:flag("--average-heads", "With --weights: their mean over the query heads, [B][Lq][Lk].")
  c:option("--entropy", "Also write each row's attention entropy [B][Hq][Lq] f32, in nats (configs with "
    .. "entropy = true).")
    :argname("E.npy")
  c:option("--threads", "Threads (0: OpenMP's default).", "0"):convert(tonumber)
  c:option("--isa", "Force an ISA variant (scalar, avx2, avx512, avx512bf16, neon).")
  c:option("--dropout-p", "Configs with dropout = true: the probability of dropping a weight, in [0, 1) (default 0).")
    :argname("P")
  c:option("--dropout-seed", "Configs with dropout = true: the seed of the dropout mask, 0..2^64-1 (default 0).")
    :argname("S")
  c:option("--dropout-offset", "Configs with dropout = true: the offset of the dropout mask, 0..2^32-1 (default 0).")
    :argname("N")
  c:option("--state-in", "Linear configs with state = true: the state before the call, S [B][Hkv][D][Dv] and "
    .. "z [B][Hkv][D] f32 (default: zero)."):args(2):argname({ "S.npy", "Z.npy" })
  c:option("--state-out", "Linear configs with state = true: write the state after the call, S and z f32 "
    .. "(may name the --state-in files: updated in place)."):args(2):argname({ "S.npy", "Z.npy" })
  c:option("--sinks", "Configs with sinks = true (required there): a logit per query head [Hq], f32 or f64.")
    :argname("S.npy")
  c:option("--block-table", "Paged configs (required there, but with --random-inputs): int32 [B][M], key j of "
    .. "batch b in slot j % P of page BT[b][j / P]; --k and --v are then pools [N][P][Hkv][D] (order NHD) or "
    .. "[N][Hkv][P][D] (HND)."):argname("BT.npy")
  c:option("--rope-cos", "Configs with rope = {table = true} (required there): cos of each rotated pair's angle at "
    .. "positions 0..T-1, [T][dim/2], f32 or f64."):argname("C.npy")
  c:option("--rope-sin", "Configs with rope = {table = true} (required there): the sines, as --rope-cos.")
    :argname("S.npy")
  c:option("--q-norm-w", "Configs with qk_norm (required there): the weights of the query rows' RMS norm, [D], "
    .. "f32 or f64."):argname("W.npy")
  c:option("--k-norm-w", "Configs with qk_norm, with --k-new (required there): the weights of the new key rows' "
    .. "RMS norm, [D], f32 or f64."):argname("W.npy")
  c:flag("--reference", "Compute with the naive float64 reference instead of the kernel (slow; for checking).")
  c:option("--do", "Configs with backward = true: dO [B][Lq][Hq][Dv], the gradient of the output; runs the "
    .. "backward pass after the forward, with its O and LSE (needs --dq, --dk, --dv)."):argname("dO.npy")
  c:option("--dq", "With --do: where to write dQ [B][Lq][Hq][D]."):argname("dQ.npy")
  c:option("--dk", "With --do: where to write dK [B][Lk][Hkv][D]."):argname("dK.npy")
  c:option("--dv", "With --do: where to write dV [B][Lk][Hkv][Dv]."):argname("dV.npy")
  c:option("--dsinks", "With --do, configs with sinks = true: where to write the sink logits' gradient [Hq] "
    .. "(f32)."):argname("dS.npy")
  c:option("--drel", "With --do, configs with rel_bias: where to write the relative position table's gradient "
    .. "[rows][Hq] (f32, rel_table's shape)."):argname("dT.npy")
  c:option("--dq-norm-w", "With --do, configs with qk_norm: where to write the query norm weights' gradient [D] "
    .. "(f32)."):argname("dW.npy")
  c:option("--k-new", "Sdpa configs: new keys [B][Ln][Hkv][D] to append (f32, f64 or f16, stored as Q is); --k "
    .. "and --v are then the cache of capacity Lk, --seqlens-k its lengths before the call."):argname("KN.npy")
  c:option("--v-new", "With --k-new: the new values [B][Ln][Hkv][Dv] (not with shared_kv = true)."):argname("VN.npy")
  c:option("--k-out", "With --k-new: write the keys' cache after appending, shaped as --k (may name --k: updated "
    .. "in place)."):argname("K2.npy")
  c:option("--v-out", "With --k-new: write the values' cache after appending, shaped as --v (may name --v).")
    :argname("V2.npy")
end

function M.run(args)
  local argv = { "-o", args.output }
  for _, flag in ipairs({ "q", "k", "v", "s", "h", "w_s", "w_h", "u", "w", "v_attn", "b" }) do
    tool.pass(argv, "--" .. flag:gsub("_", "-"), args[flag])
  end
  tool.pass(argv, "--random-inputs", args.random_inputs)
  tool.pass(argv, "--seq-q", args.seq_q)
  tool.pass(argv, "--seq-k", args.seq_k)
  tool.pass(argv, "--batch", args.batch)
  tool.pass(argv, "--seqlens-k", args.seqlens_k)
  tool.pass(argv, "--mask", args.mask)
  tool.pass(argv, "--rel-table", args.rel_table)
  tool.pass(argv, "--lse", args.lse)
  tool.pass(argv, "--weights", args.weights)
  tool.pass(argv, "--average-heads", args.average_heads)
  tool.pass(argv, "--entropy", args.entropy)
  tool.pass(argv, "--threads", tostring(args.threads))
  tool.pass(argv, "--isa", args.isa)
  tool.pass(argv, "--reference", args.reference)
  tool.pass(argv, "--dropout-p", args.dropout_p)
  tool.pass(argv, "--dropout-seed", args.dropout_seed)
  tool.pass(argv, "--dropout-offset", args.dropout_offset)
  tool.pass(argv, "--sinks", args.sinks)
  tool.pass(argv, "--block-table", args.block_table)
  for _, flag in ipairs({ "do", "dq", "dk", "dv", "dsinks", "drel", "dq_norm_w" }) do
    tool.pass(argv, "--" .. flag:gsub("_", "-"), args[flag])
  end
  for _, flag in ipairs({ "k_new", "v_new", "k_out", "v_out" }) do
    tool.pass(argv, "--" .. flag:gsub("_", "-"), args[flag])
  end
  tool.pass(argv, "--rope-cos", args.rope_cos)
  tool.pass(argv, "--rope-sin", args.rope_sin)
  tool.pass(argv, "--q-norm-w", args.q_norm_w)
  tool.pass(argv, "--k-norm-w", args.k_norm_w)
  for _, flag in ipairs({ "state_in", "state_out" }) do
    if args[flag] then
      argv[#argv + 1] = "--" .. flag:gsub("_", "-")
      argv[#argv + 1] = args[flag][1]
      argv[#argv + 1] = args[flag][2]
    end
  end
  return tool.run("run", args, argv)
end

return M
