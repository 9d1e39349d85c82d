--- Names of everything the generator emits.  The name is the spec (XNNPACK
-- style): what a symbol computes, its register block and storage type come
-- before the double underscore, the ISA after it.
--
--   attn_<op>_<M>x<N>[_d<D>][v<Dv>]_<dtype>[_<field>...]__<isa>   a micro-kernel, named by its math
--   attn_<config>_<op>[_<MR>x<N>][_<dtype>][__<isa>]              a symbol of one config
--   attn_<op>[_q4]__<isa>                                         shared vector math and ISA helpers
--   attn_<op>                                                     shared plain C helpers
--
-- A micro-kernel's name holds everything its body depends on: the
-- operation, the register block, the head dims it loops over (d: D, the
-- reduction of the scores; v: Dv, where N is not Dv already), the storage
-- type it reads, the ISA, and the named fields FIELDS lists where the
-- config's plan chose something the rest does not imply (a packed panel's
-- stride, prefetching).  Two configs that need the same kernel therefore
-- render the same text under the same name, and the micro-kernel tests
-- test each name once (tests/gen_ukernel_tests.lua).
--
-- for example
--   attn_llama3_8b_fwd                      entry point (validates, dispatches)
--   attn_llama3_8b_fwd__avx512              one ISA variant
--   attn_qk_8x32_d128_f32__avx512           scores micro-kernel: 8 rows x 32 columns, D = 128, f32 operands
--   attn_pv_6x128_f32__avx512               P*V micro-kernel: 6 rows x Dv = 128 columns
--   attn_lanes_8x1_d128_f32_p32_pf__avx512  decode scores of 8 keys, Q^T rows 32 floats apart, prefetching
--   attn_llama3_8b_kernel                   the attn_kernel descriptor
--   attn_exp2_q4__avx512                    exp2 on four-float registers
--
-- OPS is the one table of what exists; build(), micro() and parse() read
-- it, so every name built parses back to the same fields, and tests,
-- benchmarks and the micro-kernel tests derive what they need from names.
local isa_registry = require("isa")

local M = {}

--- Storage types a name can carry.
M.DTYPES = { "f32", "bf16", "f16", "q8_0", "q4_0" }

--- op -> how its names are formed:
--   shape: "MxN" (a register block: rows x columns) or nil (no shape)
--   dtype: whether the storage type of its operands is part of the name
--          (true: given by the caller; "q" or "kv": that tensor's type)
--   isa:   whether it is one ISA's (a "__<isa>" suffix)
--   micro: a micro-kernel the micro-kernel tests check alone
--   math:  named by its math, not by the config (micro()): the head dims
--          its name spells ("d": D, "v": Dv, "": none, N being Dv)
--   what:  a line for documents and tests
M.OPS = {
  -- the interface of a config's kernel
  fwd = { isa = "optional", what = "entry point (no ISA) or one ISA variant" },
  kernel = { what = "the attn_kernel descriptor" },
  variants = { what = "the table of ISA variants compiled in" },
  -- micro-kernels (templates/lib/)
  qk = { shape = "MxN", math = "d", dtype = true, isa = true, micro = true,
    what = "scores C[M][N] = A[M][D] B[D][N], A's rows broadcast against a packed panel B" },
  pv = { shape = "MxN", math = "", dtype = true, isa = true, micro = true,
    what = "O[M][N] = alpha O + P[M][keys] V[keys][N]" },
  qkpf = { shape = "MxN", math = "d", dtype = true, isa = true, micro = true,
    what = "decode: qk's scores, also asking for rows of the next block in L2, a line every other d" },
  qkdp = { shape = "MxN", math = "d", dtype = true, isa = true, micro = true,
    what = "scores C[M][N] = scale A[M][D] B[D][N] by pairwise dot products, A and B as pairs along D" },
  pvdp = { shape = "MxN", math = "", dtype = true, isa = true, micro = true,
    what = "O[M][N] = alpha O + P[M][keys] V[keys][N] by pairwise dot products, P and V packed as pairs of keys" },
  dot = { shape = "MxN", math = "d", dtype = "kv", isa = true, micro = true,
    what = "scores of M query rows against N keys by dot products along D" },
  sqk = { shape = "MxN", math = "dv", dtype = "kv", isa = true, micro = true,
    what = "streaming decode: M rows' scores against N keys, through the softmax step (supd) into their weights" },
  spv = { shape = "MxN", math = "", dtype = "kv", isa = true, micro = true,
    what = "streaming decode: M rows += p V, one V row" },
  lanes = { shape = "MxN", math = "d", dtype = "kv", isa = true, micro = true,
    what = "decode: S^T of M keys against one vector of a kv head's rows, rows along the lanes" },
  dpairs = { shape = "MxN", math = "d", isa = true, micro = true,
    what = "decode: S^T of M keys (f32) against N half vectors of a kv head's rows (N = 1: half a vector; "
      .. "N = 2: one vector, in two), two values of D a row" },
  hpairs = { shape = "MxN", math = "d", isa = true, micro = true,
    what = "decode: S^T of M keys (f32) against a quarter vector of a kv head's rows, two values of D a row, "
      .. "on half-width vectors" },
  supd = { shape = "MxN", math = "v", isa = true, micro = true,
    what = "streaming decode: the lazy online-softmax step of M rows at one key (O rows of Dv rescaled)" },
  spvk = { shape = "MxN", math = "v", dtype = "kv", isa = true, micro = true,
    what = "streaming decode: M rows += the weights of N keys times their V rows" },
  srescale = { shape = "MxN", math = "", isa = true, micro = true,
    what = "streaming decode: M rows of O times their rescale factors" },
  sqblk = { shape = "MxN", dtype = "kv", isa = true,
    what = "streaming decode, block caches: M rows against N keys (scores, one softmax update, P*V, O in registers)" },
  sqbdot = { shape = "MxN", math = "d", dtype = "kv", isa = true, micro = true,
    what = "streaming decode, block caches: M rows' f32 scores against N keys (2), a block's scale once a row" },
  sterms = { shape = "MxN", isa = true, what = "streaming decode: score terms and hiding of M rows at one key" },
  qpack = { dtype = "q", isa = true, what = "one query row, scaled into a packed row" },
  qpacki = { dtype = "q", isa = true,
    what = "decode (matmul int8): one query row quantized to q8_0: its codes, scaled block scales and code sums" },
  qpackdp = { shape = "MxN", math = "d", dtype = "q", isa = true, micro = true,
    what = "one query row (M = 1) packed as N pairs of head dims, zero past D (prefill, pair dot products)" },
  kvpack = { dtype = "kv", isa = true,
    what = "a panel of K^T and V rows packed for the prefill path (as pairs for pair dot products)" },
  -- the loops around them (templates/families/)
  unit = { isa = true, what = "prefill: one (batch, head, query tile) work unit" },
  punit = { isa = true,
    what = "prefill: a sparse pattern's gathered keys of a block of query rows, into partial sums" },
  scratch = { isa = true, what = "prefill: per-thread scratch type" },
  -- the prefill work unit's phases, inlined into it (families/sdpa_prefill_unit, _tile, _epilogue):
  -- u... of the key tiles' units, p... of the sparse pattern's panel pass
  uspan = { isa = true, what = "prefill: a unit's rows' spans of keys, and the keys any of them sees" },
  uload = { isa = true, what = "prefill: a unit's rows' running sums (from zero or carried) and packed Q" },
  uscores = { isa = true, what = "prefill: a key tile's scores of a unit's rows" },
  usoft = { isa = true, what = "prefill: a key tile's score terms, masks and online softmax, row by row" },
  upv = { isa = true, what = "prefill: a key tile's O = alpha O + P V of a unit's rows" },
  uend = { isa = true, what = "prefill: a unit's epilogue: O, LSE, entropy and weights of its rows" },
  pspan = { isa = true, what = "prefill: a panel unit's rows' spans, as the panel's columns" },
  pload = { isa = true, what = "prefill: a panel unit's rows' running sums (from zero) and packed Q" },
  pscores = { isa = true, what = "prefill: a panel tile's scores of a panel unit's rows" },
  psoft = { isa = true, what = "prefill: a panel tile's online softmax, row by row" },
  ppv = { isa = true, what = "prefill: a panel tile's O = alpha O + P V of a panel unit's rows" },
  decode = { isa = true, what = "decode path: splits, then the merge" },
  dunit = { isa = true, what = "decode: one (batch, split) unit, blocked" },
  drows = { isa = true, what = "decode: the blocked unit's rows, Q packed and spans, once a batch" },
  dscores = { isa = true, what = "decode: the blocked unit's scores of one block, by row class" },
  dqk = { isa = true, what = "decode: the blocked unit's scores of one block by dot products or Q^T panels" },
  dmasks = { isa = true, what = "decode: the blocked unit's score terms, masks and weights of one block" },
  dpv = { isa = true, what = "decode: the blocked unit's P*V of one block" },
  dsplit = { isa = true, what = "decode: the blocked unit's split result, each real row's output and LSE" },
  sunit = { shape = "MxN", isa = true, what = "decode: one (batch, split) unit, streaming, M rows a kv head" },
  spairs = { shape = "MxN", isa = true,
    what = "decode: a streaming unit's steps of N keys (M rows a kv head), where the CPU takes them" },
  dscratch = { isa = true, what = "decode: per-thread scratch type" },
  dmerge = { isa = true, what = "decode: combines one row's splits" },
  dqpackdp = { isa = true, what = "decode (pair products): one query row into a column of a Q^T panel of bf16 pairs" },
  dppackdp = { isa = true, what = "decode (pair products): a block's P rounded to bf16, rows of pairs of keys" },
  dvpackdp = { isa = true, what = "decode (pair products): a block's V rows packed as bf16 pairs of keys" },
  -- the backward pass of sdpa (templates/families/sdpa_backward*)
  bwd = { isa = "optional", what = "backward pass: entry point (no ISA) or one ISA variant" },
  bwd_kernel = { what = "the attn_bwd_kernel descriptor of the backward pass" },
  bwd_variants = { what = "the table of the backward pass's ISA variants compiled in" },
  bwd_scratch = { isa = true, what = "backward: per-thread scratch type" },
  bwd_head = { isa = true,
    what = "backward: a kv head's packed K, K^T, V^T and its query heads' rows (a struct type)" },
  bwd_mm = { isa = true, what = "backward: C += A B on packed f32 tiles, A read with two strides (A or A^T)" },
  bwd_pv = { isa = true,
    what = "backward: the P*V micro-kernels on any count of rows (dV, dK and dQ on lib/pv)" },
  bwd_keys = { isa = true,
    what = "backward: a key tile's K, K^T and V^T rows widened to f32, zero past the valid keys" },
  bwd_rows = { isa = true,
    what = "backward: a query tile's Q and dO rows widened to f32, LSE in base 2, D_i and the rows' factors" },
  bwd_class = { isa = true, what = "backward: the spans of a query tile's rows and how they see a key tile" },
  bwd_tile = { isa = true,
    what = "backward: P, its dropped-out weights and dS of one query tile against one key tile" },
  bwd_dkdv = { isa = true, what = "backward: one (batch, kv head, key tile) unit, dK and dV of its keys" },
  bwd_dq = { isa = true, what = "backward: one (batch, query head, query tile) unit, dQ of its rows" },
  bwd_sink = { isa = true, what = "backward: a query head's rows in the sink logit's gradient (sinks)" },
  bwd_rel_base = { isa = true,
    what = "backward: the first row of the relative position table in a key tile's sums of its gradient" },
  bwd_rel = { isa = true,
    what = "backward: a tile's dS added to its key tile's sums of the relative table's gradient" },
  bwd_rel_open = { isa = true, what = "backward: the sums of the relative table's gradient allocated (drel_table)" },
  bwd_rel_rows = { isa = true, what = "backward: the rows of the relative table a batch's key tiles have sums of" },
  bwd_rel_close = { isa = true, what = "backward: the relative table's gradient stored, its sums freed" },
  bwd_rel_sum = { isa = true,
    what = "backward: one row of the relative table's gradient, the key tiles' sums in order" },
  -- the linear family's loops (templates/families/linear)
  phiq = { dtype = "q", isa = true, what = "linear: phi(q) of one query row into a packed row" },
  phik = { isa = true, what = "linear: phi in place on a packed K^T panel, and the sums of its rows" },
  zdot = { isa = true, what = "linear: phi(q) . z of one packed query row" },
  prefetch_q = { what = "Q rows of a head asked for into L2 ahead of their packing" },
  prefetch_kv = { what = "K and V rows of a kv head asked for into L2 ahead of their packing" },
  kv_residue = { what = "the strided pattern's keys of one residue, as a view of the rows" },
  prefetch_bytes_l2 = { what = "the cache lines of a row asked for into L2" },
  lpack = { isa = true, what = "linear: one key's phi(k) row and V row, packed, and phi(k) added to z" },
  lphiq = { isa = true, what = "linear: phi(q) of a tile's rows for every query head of a unit" },
  ltrans = { isa = true, what = "linear: the diagonal block's phi(k) rows transposed into K^T panels" },
  lrows = { isa = true, what = "linear: the P*V kernel on fewer rows than its block" },
  lfold = { isa = true, what = "linear: a packed block of keys folded into the state S" },
  lunit = { isa = true, what = "linear: one (batch, run of kv heads) work unit" },
  ltile = { isa = true, what = "linear: one query head's tile of rows against the running state" },
  lblock = { isa = true, what = "linear: a block of keys packed for every kv head of a unit, key by key" },
  ladvance = { isa = true, what = "linear: a range of keys folded into the state of a unit's kv heads" },
  lscratch = { isa = true, what = "linear: per-thread scratch type" },
  lscratch_fits = { isa = true, what = "linear: a type whose size is negative where the scratch is not as planned" },
  lvariant = { what = "linear: the sizes of a variant's thread scratch (a struct type)" },
  lvariants = { what = "linear: the sizes of each variant's thread scratch, a table" },
  llayout = { what = "linear: the layout of a call's memory (a struct type)" },
  llayout_of = { what = "linear: the layout of a call's memory for its batch and threads" },
  -- the classic families' loops (templates/families/classic)
  cdots = { shape = "MxN", dtype = true, isa = true,
    what = "classic: dot products along Ds of M rows (of the named type) by N rows of the K/V type" },
  cdoth = { shape = "MxN", dtype = true, isa = true,
    what = "classic: dot products along Dh of M rows (of the named type) by N rows of the K/V type" },
  ctanh = { isa = true, what = "classic: tanh on vectors (a rational fit)" },
  cscores = { shape = "MxN", dtype = true, isa = true,
    what = "classic: v . tanh(x + u) of M rows against N rows u of the named type" },
  cctx = { dtype = "kv", isa = true,
    what = "classic: one row's context sums over some of its visible encoder states" },
  cstore = { isa = true, what = "classic: one row's context, its sums normalized and stored" },
  cprojs = { isa = true, what = "classic: a block of weight rows times the decoder rows of one batch" },
  cprojh = { isa = true, what = "classic: a block of weight rows times the encoder rows of one batch" },
  crow = { isa = true, what = "classic: one decoder row's scores over a block of keys" },
  csoftmax = { isa = true, what = "classic: one decoder row's softmax over its visible keys, and its weights" },
  cblock = { isa = true, what = "classic: a block of decoder rows: scores, softmax, weights and context" },
  cscratch = { isa = true, what = "classic: per-thread scratch type" },
  s_row = { what = "classic: address of a decoder state row" },
  h_row = { what = "classic: address of an encoder state row" },
  u_row = { what = "classic: address of a row of the precomputed U" },
  c_row = { what = "classic: address of a context row" },
  a_row = { what = "classic: address of a row of the attention weights" },
  -- config-level helpers (no ISA)
  row_span = { what = "the keys a query position sees" },
  tile_class = { what = "how a block of rows sees a block of keys (an enum type)" },
  classify = { what = "how a block of rows sees a block of keys" },
  sees = { what = "whether any row of a block may see a column range" },
  dresult = { what = "decode: a split's normalized output and LSE" },
  split_keys = { what = "decode: the keys of a split, from the cache's length alone" },
  workspace_size = { what = "the bytes of the workspace a call of given sizes needs (0: none)" },
  dlayout = { what = "decode: the layout of the path's memory (a struct type)" },
  dlayout_of = { what = "decode: the layout of the path's memory for a call's sizes" },
  call_threads = { what = "the threads of a call (args->threads, or OpenMP's default)" },
  call_mem = { what = "a call's memory: the caller's workspace or one allocation of the hook's" },
  hook_mem = { what = "a call's memory from the allocator hook alone (classic)" },
  clayout = { what = "classic: the offsets of a call's block (a struct type)" },
  clayout_of = { isa = true, what = "classic: the layout of a call's block, every thread's scratch in it" },
  pvariant = { what = "prefill: the sizes of a variant's memory (a struct type)" },
  pvariants = { what = "prefill: the sizes of each variant's memory, a table" },
  playout = { what = "prefill: the layout of the path's memory (a struct type)" },
  playout_of = { what = "prefill: the layout of the path's memory for a call's sizes" },
  prefill_mem = { what = "prefill: the path's memory, the caller's workspace or one allocation" },
  decode_mem = { what = "decode: the path's memory, the caller's workspace or one allocation" },
  pscratch_fits = { isa = true, what = "prefill: a type whose size is negative where a scratch overflows its slot" },
  dscratch_fits = { isa = true, what = "decode: a type whose size is negative where a scratch overflows its slot" },
  next_row = { what = "decode: a row of the next block, in address order" },
  next_rows = { what = "decode: the rows of the next block a score kernel prefetches" },
  prefetch_row = { what = "prefetch the cache lines of a row" },
  prefetch_row_l2 = { what = "prefetch the cache lines of a row into the second-level cache" },
  prefetch_key_start = { what = "the first lines of a key's K and V rows asked for into L2" },
  key_starts = { what = "decode: the first lines of a few keys a block further asked for into L2, after a score call" },
  shidden = { what = "streaming decode: whether a row does not see a key" },
  sadd = { what = "streaming decode: what is added to a row's score at a key" },
  alibi_slopes = { what = "ALiBi slopes of the query heads" },
  rel_bucket = { what = "the relative position table's row at a distance j - p" },
  rel_add = { what = "what the relative position table adds to a score at a distance, base 2" },
  rel_band = { what = "the relative position table's additions at consecutive distances" },
  visible = { what = "whether a key lies in a row's spans" },
  sparse_key = { what = "whether the sparse pattern keeps a key for a query position" },
  sparse_first = { what = "the first key at or after a key that the sparse pattern keeps" },
  sparse_next = { what = "the next key after a kept one that the sparse pattern keeps" },
  sparse_last = { what = "the last key at or before a key that the sparse pattern keeps" },
  sparse_index = { what = "the column of a key in the panel of a sparse pattern's gathered keys" },
  summary_key = { what = "the key at a column of the gathered panel of a fixed pattern's summary keys" },
  mask_at = { what = "address of a mask or bias element" },
  dropout_row = { isa = true, what = "dropout of one row's probabilities at a range of keys" },
  softmax = { isa = true, what = "online softmax of one row, keys along the lanes" },
  softmax_t = { isa = true, what = "online softmax of a vector of rows, key by key" },
  q_row = { what = "address of a query row" },
  temperature = { what = "the temperature of a query row at a position (its factor on Q)" },
  rope_inv_freq = { what = "RoPE's inverse frequency of each rotated pair (double)" },
  rope_step = { what = "cos and sin of RoPE's angle step of each pair: one position (double)" },
  rope_cs = { what = "the cos and sin of RoPE's angles at one position (a struct type)" },
  rope_at = { what = "RoPE's cos and sin at a position, stepped from the last one where it is the next" },
  rope_rotate = { what = "a packed query row rotated by RoPE's cos and sin" },
  rope_rotate_back = { what = "a gradient with respect to a rotated row, rotated back (the backward pass)" },
  qk_norm = { what = "a row's RMS norm times its weights (qk_norm), for query rows and appended key rows" },
  qk_norm_back = { what = "the backward through qk_norm: a row's gradient, and the weights' share" },
  append = { what = "the entry point that stores new K / V rows into the cache" },
  append_store = { what = "new K / V rows stored into the cache (appending)" },
  append_attend = { what = "the entry point given new rows: store, then attend" },
  k_row_mut = { what = "address of a key row to write (appending)" },
  v_row_mut = { what = "address of a value row to write (appending)" },
  kv = { what = "where the K and V rows of one batch lie (a struct type)" },
  kv_of = { what = "the K and V rows of one batch" },
  k_row = { what = "address of a key row (every K read goes through it)" },
  v_row = { what = "address of a value row (every V read goes through it)" },
  o_row = { what = "address of an output row" },
  p_row = { what = "address of a row of the attention weights" },
  kv_zero = { what = "a row of zeros: the K and V rows of an evicted page (paged)" },
  k_tile_row = { what = "address of a key row a prefill tile reads (paged: zeros on an evicted page)" },
  v_tile_row = { what = "address of a value row a prefill tile reads (paged: zeros on an evicted page)" },
  kvg = { what = "a decode block's K and V rows gathered into the scratch (paged, small pages: a struct type)" },
  kg_row = { what = "address of a key row in a gathered decode block" },
  vg_row = { what = "address of a value row in a gathered decode block" },
  kv_gather = { what = "a decode block's K and V rows copied from their pages into the scratch" },
  k_step = { what = "the stride from a key row to the next on its page (paged: 0 on an evicted page)" },
  v_step = { what = "the stride from a value row to the next on its page (paged: 0 on an evicted page)" },
}

--- Shared (not config-scoped) helpers: attn_<op>[_q4]__<isa>.
M.SHARED = {
  exp2 = "2^x on vectors", tanh = "tanh on vectors", hsum4 = "four lane sums, stored",
  hsum4q = "four lane sums, as four floats", hadd = "the sum of a vector's lanes",
  hmax = "the max of a vector's lanes", transpose8 = "an 8 x 8 block transposed",
  transpose16 = "a 16 x 16 block transposed",
  bcast_pair = "a pair of 16-bit values in every lane", iota = "the vector {0, 1, 2, 3}",
  loadn = "the first n lanes loaded, the rest 0", storen = "the first n lanes stored",
  set4 = "four floats as a vector", set2 = "two floats in every pair of lanes",
  sum_pairs = "two vectors' lane pairs summed, each into its own row of scores",
  set2_half = "two floats in every pair of a half-width vector's lanes",
  sum_pairs_half = "two half-width vectors' lane pairs summed, each into its own row of scores",
  widen_bf16 = "a bf16 value as f32", widen_f16 = "an f16 value as f32",
  widen_q8_0 = "value e of a row of q8_0 blocks as f32", widen_q4_0 = "value e of a row of q4_0 blocks as f32",
  load_q8_0 = "a vector of a row of q8_0 blocks' values, dequantized",
  load_q4_0 = "a vector of a row of q4_0 blocks' values, dequantized",
  narrow_bf16 = "f32 to bf16, round to nearest even", narrow_f16 = "f32 to f16, round to nearest even",
  loadn_bf16 = "the first n bf16 values as f32 lanes", loadn_f16 = "the first n f16 values as f32 lanes",
  storen_bf16 = "the first n lanes stored as bf16", storen_f16 = "the first n lanes stored as f16",
  vmath_exp2 = "exp2 over an array (the vector math's accuracy test)",
  hadd8 = "the sum of an 8-float vector's lanes",
  sdot = "sdot (NEON dotprod): dot products of signed bytes, 4 a lane",
  vmath_tanh = "tanh over an array (the vector math's accuracy test)",
}

-- matmul = "int8": the scores of 1 to 4 (or 8) packed q8_0 query rows against one
-- or two K rows of blocks, in integer block dots (the _dp form: the ISA's
-- dot-product extension, AVX512-VNNI, AVX-VNNI or NEON's dotprod, under its
-- own target)
for _, r in ipairs({ 1, 2, 3, 4, 8 }) do
  for _, kv in ipairs({ "q8_0", "q4_0" }) do
    for _, keys in ipairs({ "", "x2" }) do
      local what = ("the scores of %d q8_0 query row%s against %s row%s of %s blocks, integer block dots")
        :format(r, r > 1 and "s" or "", keys == "x2" and "two" or "a", keys == "x2" and "s" or "", kv)
      M.SHARED[("idot%d%s_%s"):format(r, keys, kv)] = what
      M.SHARED[("idot%d%s_%s_dp"):format(r, keys, kv)] = what .. ", with the ISA's dot-product extension"
    end
  end
end

-- the streaming decode's block step (matmul = "int8", int8.keys16): 1 to 4
-- rows' scores against 16 K rows, each row's 16 in one vector
for r = 1, 4 do
  for _, kv in ipairs({ "q8_0", "q4_0" }) do
    local what = ("the scores of %d q8_0 query row%s against 16 K rows of %s blocks, a row's in one vector")
      :format(r, r > 1 and "s" or "", kv)
    M.SHARED[("iqkeys%d_%s"):format(r, kv)] = what
    M.SHARED[("iqkeys%d_%s_dp"):format(r, kv)] = what .. ", with the ISA's dot-product extension"
  end
end

--- The named fields a micro-kernel's name may end in (after its storage
-- type, in this order): what its body depends on that the operation,
-- block, head dims, storage type and ISA do not imply.
--   p<n>  the packed panel it reads (B of qk, Q^T of lanes) has rows n
--         floats (qkdp: pairs) apart, where that is not N
--   pf    it takes pr, rows of the next block to ask for in L2 (D / 16
--         lines a row of an f32 cache, templates/lib/qk, pv, decode_scores)
--   i8    integer block dots of q8_0 query rows (matmul = "int8")
--   sc    the scores are softcapped: it takes the cap and its inverse (sqk)
M.FIELDS = { { pattern = "p%d+", what = "the packed panel's row stride, where it is not N" },
  { pattern = "pf", what = "takes pr: rows of the next block asked for in L2" },
  { pattern = "i8", what = "integer block dots of q8_0 query rows (matmul = \"int8\")" },
  { pattern = "sc", what = "softcapped scores: takes the cap and its inverse" } }

--- Plain C helpers no config or ISA shapes: attn_<op>.
M.COMMON = {
  prefetch_line_l2 = "prefetch one cache line into the second-level cache",
}

local function is_dtype(s)
  for _, d in ipairs(M.DTYPES) do
    if d == s then return true end
  end
  return false
end

--- The name of op for config `cfg`; t holds m, n (the shape), dtype, isa as
-- the op's entry asks.  Raises on a field the op does not take or lacks.
function M.build(cfg, op, t)
  t = t or {}
  local spec = M.OPS[op]
  if not spec then error(("naming: unknown op '%s'"):format(tostring(op)), 2) end
  if spec.math then error(("naming: %s is named by its math (naming.micro)"):format(op), 2) end
  local parts = { "attn_", cfg, "_", op }
  if spec.shape then
    if not (t.m and t.n) then error(("naming: %s needs m and n"):format(op), 2) end
    parts[#parts + 1] = ("_%dx%d"):format(t.m, t.n)
  end
  if spec.dtype then
    if not is_dtype(t.dtype) then error(("naming: %s needs a dtype"):format(op), 2) end
    parts[#parts + 1] = "_" .. t.dtype
  end
  if t.isa then
    if not spec.isa then error(("naming: %s takes no ISA"):format(op), 2) end
    parts[#parts + 1] = "__" .. t.isa
  elseif spec.isa == true then
    error(("naming: %s needs an ISA"):format(op), 2)
  end
  return table.concat(parts)
end

--- The name of a shared helper: attn_<op>[_q4]__<isa>.
function M.shared(op, isa, q4)
  if not M.SHARED[op] then error(("naming: unknown shared helper '%s'"):format(tostring(op)), 2) end
  return ("attn_%s%s__%s"):format(op, q4 and "_q4" or "", isa)
end

--- The name of micro-kernel op, named by its math (OPS[op].math): t holds
-- m, n (its block), d and v (the head dims its entry spells), dtype (f32
-- where the op has none), isa, and fields (a list of FIELDS' spellings, in
-- their order).  Raises on a field missing or not in FIELDS.
function M.micro(op, t)
  local spec = M.OPS[op]
  if not (spec and spec.math) then error(("naming: %s is not named by its math"):format(tostring(op)), 2) end
  if not (t.m and t.n and t.isa) then error(("naming: %s needs m, n and an ISA"):format(op), 2) end
  local dims = ""
  if spec.math:find("d", 1, true) then
    if not t.d then error(("naming: %s needs d"):format(op), 2) end
    dims = "_d" .. t.d
  end
  if spec.math:find("v", 1, true) then
    if not t.v then error(("naming: %s needs v"):format(op), 2) end
    dims = (dims == "" and "_v" or dims .. "v") .. t.v
  end
  local dtype = t.dtype or "f32"
  if not is_dtype(dtype) then error(("naming: %s needs a dtype"):format(op), 2) end
  local parts = { ("attn_%s_%dx%d%s_%s"):format(op, t.m, t.n, dims, dtype) }
  local at = 1
  for _, f in ipairs(t.fields or {}) do
    while M.FIELDS[at] and not f:match("^" .. M.FIELDS[at].pattern .. "$") do at = at + 1 end
    if not M.FIELDS[at] then error(("naming: %s: field '%s' unknown or out of order"):format(op, f), 2) end
    parts[#parts + 1] = "_" .. f
    at = at + 1
  end
  parts[#parts + 1] = "__" .. t.isa
  return table.concat(parts)
end

--- The name of a plain C helper no config shapes: attn_<op>.
function M.common(op)
  if not M.COMMON[op] then error(("naming: unknown common helper '%s'"):format(tostring(op)), 2) end
  return "attn_" .. op
end

-- the builders of the interface, by what they are
function M.entry(name) return M.build(name, "fwd") end
function M.kernel(name) return M.build(name, "kernel") end
function M.variant(name, isa) return M.build(name, "fwd", { isa = isa }) end
-- longest op first, so that an op that ends another's name cannot take it
local OP_LIST = {}
for op in pairs(M.OPS) do OP_LIST[#OP_LIST + 1] = op end
table.sort(OP_LIST, function(a, b) return #a > #b or (#a == #b and a < b) end)

--- A micro-kernel's name without its ISA, parsed: { op=, m=, n=, d=, v=,
-- dtype=, fields= }, or nil.
local function parse_micro(rest)
  local op, m, n, s = rest:match("^attn_(%l+)_(%d+)x(%d+)(.*)$")
  local spec = op and M.OPS[op]
  if not (spec and spec.math) then return nil end
  local t = { op = op, m = tonumber(m), n = tonumber(n) }
  local dims
  if spec.math == "d" then dims = { s:match("^_d(%d+)(.*)$") }
  elseif spec.math == "v" then dims = { s:match("^_v(%d+)(.*)$") }
  elseif spec.math == "dv" then dims = { s:match("^_d(%d+)v(%d+)(.*)$") }
  else dims = { s } end
  if not dims[1] then return nil end
  s = table.remove(dims)
  if spec.math == "dv" then t.d, t.v = tonumber(dims[1]), tonumber(dims[2])
  elseif spec.math ~= "" then t[spec.math] = tonumber(dims[1]) end
  for _, d in ipairs(M.DTYPES) do
    if s:sub(1, #d + 1) == "_" .. d and (#s == #d + 1 or s:sub(#d + 2, #d + 2) == "_") then
      t.dtype, s = d, s:sub(#d + 2)
    end
  end
  if not t.dtype then return nil end
  local at, fields = 1, {}
  while s ~= "" do
    local f, more = s:match("^_([%l%d]+)(.*)$")
    if not f then return nil end
    while M.FIELDS[at] and not f:match("^" .. M.FIELDS[at].pattern .. "$") do at = at + 1 end
    if not M.FIELDS[at] then return nil end
    fields[#fields + 1], s, at = f, more, at + 1
  end
  t.fields = #fields > 0 and fields or nil
  return t
end

--- Parses an emitted name back into its parts: { config=, op=, m=, n=,
-- dtype=, isa= } (fields the op has), { op=, m=, n=, d=, v=, dtype=,
-- fields=, isa= } for a micro-kernel named by its math, { op=, isa=, q4= }
-- for a shared helper, { op= } for a common one, or nil for a name no
-- builder makes.
function M.parse(fname)
  if type(fname) ~= "string" then return nil end
  local rest, isa = fname:match("^(attn_.-)__(%w+)$")
  if rest and not isa_registry.known(isa) then rest, isa = nil, nil end
  rest = rest or fname
  if not isa and M.COMMON[rest:match("^attn_([%l%d_]+)$") or ""] then return { op = rest:sub(6) } end
  -- a micro-kernel
  local t = isa and parse_micro(rest)
  if t then
    t.isa = isa
    return t
  end
  -- a shared helper
  if isa then
    local base = rest:match("^attn_([%l%d_]+)$")
    local q4 = base and base:match("^(.+)_q4$")
    if q4 and M.SHARED[q4] then return { op = q4, isa = isa, q4 = true } end
    if base and M.SHARED[base] then return { op = base, isa = isa } end
  end
  for _, op in ipairs(OP_LIST) do
    local spec = M.OPS[op]
    local ok = not spec.math and not ((isa and not spec.isa) or (not isa and spec.isa == true))
    local s, dtype, m, n = rest, nil, nil, nil
    if ok and spec.dtype then
      local head, d -- the storage type ending the name (q8_0 and q4_0 hold an underscore)
      for _, dt in ipairs(M.DTYPES) do
        if s:sub(-#dt - 1) == "_" .. dt and #s > #dt + 1 then head, d = s:sub(1, -#dt - 2), dt end
      end
      ok = head ~= nil and is_dtype(d)
      if ok then s, dtype = head, d end
    end
    if ok and spec.shape then
      local head, a, b = s:match("^(.*)_(%d+)x(%d+)$")
      ok = head ~= nil
      if ok then s, m, n = head, tonumber(a), tonumber(b) end
    end
    local cfg = ok and s:match("^attn_([%a_][%w_]*)_" .. op .. "$")
    if cfg then return { config = cfg, op = op, m = m, n = n, dtype = dtype, isa = isa } end
  end
  return nil
end

return M
