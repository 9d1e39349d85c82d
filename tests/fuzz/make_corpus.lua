-- Writes the seed corpora of the libFuzzer targets (tests/fuzz/fuzz_*.c):
--   tests/fuzz/corpus/fuzz_npy/   small valid and near-valid .npy files
--   tests/fuzz/corpus/fuzz_args/  encoded attn_args (layout: fuzz_args.c)
-- The fuzz_args seeds follow the Makefile's FUZZ_KERNELS (tests/kernel_sets.lua
-- fuzz on configs/): per-kernel seeds are named after their kernel, the others
-- pick the first kernel with what they need.  Deterministic; run from the
-- repository root after changing an encoding or the configs:
--   luajit tests/fuzz/make_corpus.lua
-- It removes the files of fuzz_args/ it did not write (seeds of kernels that
-- left FUZZ_KERNELS).
-- Runs on LuaJIT, Lua 5.1 and Lua 5.4.

local ROOT = "tests/fuzz/corpus"

local function write(dir, name, bytes)
  local path = ROOT .. "/" .. dir .. "/" .. name
  local f = assert(io.open(path, "wb"))
  assert(f:write(bytes))
  assert(f:close())
end

-- n-byte little-endian unsigned integer (n <= 6 keeps it exact in a double)
local function le(v, n)
  local out = {}
  for i = 1, n do
    local b = v % 256
    out[i] = string.char(b)
    v = (v - b) / 256
  end
  return table.concat(out)
end

-- IEEE 754 encodings of the few values the seeds use
local F32 = { [0] = "\0\0\0\0", [1] = "\0\0\128\63", [-2] = "\0\0\0\192", [0.5] = "\0\0\0\63" }
local F64 = { [1] = "\0\0\0\0\0\0\240\63", [-3] = "\0\0\0\0\0\0\8\192" }

local function repeat_list(codes, list, n)
  local out = {}
  for i = 1, n do out[i] = codes[list[(i - 1) % #list + 1]] end
  return table.concat(out)
end

-- ---- .npy seeds ------------------------------------------------------------

local MAGIC = "\147NUMPY"

-- A header dict padded with spaces and '\n' to a multiple of 64, as numpy
-- writes it; version 1 uses a 2-byte length, 2 and 3 a 4-byte one.
local function npy(dict, data, version)
  version = version or 1
  local lenbytes = version == 1 and 2 or 4
  local pre = #MAGIC + 2 + lenbytes
  local total = pre + #dict + 1
  total = math.floor((total + 63) / 64) * 64
  local header = dict .. string.rep(" ", total - pre - #dict - 1) .. "\n"
  return MAGIC .. string.char(version, 0) .. le(#header, lenbytes) .. header .. data
end

local function dict(descr, shape, fortran)
  return ("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }"):format(descr,
    fortran and "True" or "False", shape)
end

local npy_seeds = {
  f32_2x3 = npy(dict("<f4", "(2, 3)"), repeat_list(F32, { 1, -2, 0.5, 0 }, 6)),
  f64_scalar = npy(dict("<f8", "()"), F64[-3]),
  i32_vec = npy(dict("<i4", "(3,)"), le(7, 4) .. le(0, 4) .. "\255\255\255\255"),
  i64_vec = npy(dict("<i8", "(2,)"), le(5, 8) .. le(3, 8)),
  i64_too_big = npy(dict("<i8", "(1,)"), le(2 ^ 40, 8)),
  bool_mask = npy(dict("|b1", "(2, 4)"), "\1\0\1\1\0\1\1\1"),
  u1_big_endian_char = npy(dict(">u1", "(3,)"), "\1\2\3"),
  empty_0x4 = npy(dict("<f4", "(0, 4)"), ""),
  v2_header = npy(dict("<f4", "(2,)"), F32[1] .. F32[0.5], 2),
  v3_header = npy(dict("<f8", "(1,)"), F64[1], 3),
  fortran_1d = npy(dict("<f4", "(2,)", true), F32[1] .. F32[-2]),
  long_suffix = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1L, 2L), }",
    F32[1] .. F32[1]),
  double_quotes = npy('{"descr": "<i4", "fortran_order": False, "shape": (1,)}', le(9, 4)),
  -- near-valid: each must be refused
  trailing_byte = npy(dict("<f4", "(1,)"), F32[1] .. "\0"),
  truncated_data = npy(dict("<f4", "(4,)"), F32[1]),
  fortran_2d = npy(dict("<f4", "(1, 2)", true), F32[1] .. F32[1]),
  big_endian_f4 = npy(dict(">f4", "(1,)"), F32[1]),
  duplicate_key = npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
    F32[1]),
  shape_not_tuple = npy(dict("<f4", "(1)"), F32[1]),
  nine_dims = npy(dict("<f4", "(1, 1, 1, 1, 1, 1, 1, 1, 1)"), F32[1]),
  huge_shape = npy(dict("<f8", "(4294967296, 4294967296, 16)"), F64[1]),
  bad_version = MAGIC .. "\4\0" .. le(4, 2) .. "{}\n\n",
  header_cut = (npy(dict("<f4", "(1,)"), F32[1])):sub(1, 30),
}

-- ---- the fuzz kernels ------------------------------------------------------

-- fuzz_args.c picks kernels[first byte % N] from the Makefile's FUZZ_KERNELS,
-- which is `tests/kernel_sets.lua fuzz $(CONFIG_FILES)` with CONFIG_FILES the
-- configs/*.lua and configs/test/*.lua that exist.  The same call on the same
-- files (sorted by path, as make 4.3's wildcard returns them; select sorts its
-- picks by name either way) gives the same list in the same order.
local kernel_sets = dofile("tests/kernel_sets.lua")

local function config_files()
  local p = assert(io.popen('for f in configs/*.lua configs/test/*.lua; do ' ..
    'if [ -f "$f" ]; then printf "%s\\n" "$f"; fi; done'))
  local files = {}
  for line in p:lines() do files[#files + 1] = line end
  p:close()
  table.sort(files)
  return files
end

local KERNELS, err = kernel_sets.select("fuzz", config_files())
if not KERNELS then error("make_corpus: tests/kernel_sets.lua: " .. err, 0) end
if #KERNELS == 0 then error("make_corpus: tests/kernel_sets.lua fuzz picked no configs", 0) end
if #KERNELS > 256 then error("make_corpus: more than 256 fuzz kernels; one byte picks the kernel", 0) end

-- What a seed may need of its kernel: a description and a test on the
-- config table (as tests/kernel_sets.lua loads it: no defaults applied).
local function has_mask(c) return c.mask == "bool" or c.mask == "bias" end
local NEEDS = {
  mask = { 'a mask tensor (mask = "bool" or "bias")', has_mask },
  mask_bool = { 'a bool mask (mask = "bool")', function(c) return c.mask == "bool" end },
  mask_bias = { 'a bias mask (mask = "bias")', function(c) return c.mask == "bias" end },
  padding = { "padding (seqlens_k)", function(c) return c.padding == true end },
  linear_state = { 'a linear state (kind = "linear", state = true)',
    function(c) return kernel_sets.features(c).linear_state == true end },
  classic = { 'a classic family (kind = "additive" or "luong")',
    function(c) return kernel_sets.family(c).args == "attn_classic_args" end },
  paged = { "paged K/V (paged = {page = P})", function(c) return type(c.paged) == "table" end },
  rope_table = { "a RoPE table (rope = {table = true})",
    function(c) return type(c.rope) == "table" and c.rope.table == true end },
  block_kv = { 'K/V in a block type (dtype = {kv = "q8_0"} or "q4_0")', function(c)
    local kv = type(c.dtype) == "table" and c.dtype.kv
    return kv == "q8_0" or kv == "q4_0"
  end },
  -- nothing but Q, K, V, O (and LSE) to check: a seed's one bad argument is
  -- the only thing wrong with it
  plain = { "neither a mask nor padding", function(c) return not has_mask(c) and c.padding ~= true end },
}

-- The index in KERNELS (0-based, as the first byte) of the first kernel
-- whose config has property `need`; an error if none has.
local function kernel_with(need, seed)
  local p = assert(NEEDS[need], need)
  for i, e in ipairs(KERNELS) do
    if p[2](e.cfg) then return i - 1 end
  end
  local names = {}
  for i, e in ipairs(KERNELS) do names[i] = e.name end
  error(("make_corpus: seed '%s' needs a kernel with %s, and no fuzz kernel has it (%s)"):format(
    seed, p[1], table.concat(names, " ")), 0)
end

-- the kernel a raw input's first byte picks, as fuzz_args.c does
local function kernel_of(bytes)
  return KERNELS[(bytes:byte(1) or 0) % #KERNELS + 1]
end

-- ---- attn_args seeds -------------------------------------------------------

-- (linear kernels with state: mask_null is state_s NULL, sparse state_z NULL)
local FLAG = { q_null = 1, o_null = 8, lse = 16, seqlens_null = 32, mask_null = 64, sparse = 128 }

local function len_field(v)
  if v < 224 then return string.char(v) end
  local x = v - 224
  assert(x < 16 * 256)
  return string.char(0xE0 + math.floor(x / 256), x % 256)
end

-- fields: kernel (a 0-based index into KERNELS), entry, flags, batch,
-- seq_q, seq_k, strides (16 stride fields as byte strings, innermost first
-- per tensor), threads, seed, seqlens, a paged kernel's table fields
-- (num_pages, the table's stride, its faults and their bytes: a byte string)
-- and a rope-table kernel's fields (rope_rows, faults: a byte string)
local function args(t)
  local strides = t.strides or string.rep("\0", 16)
  assert(#strides >= 16)
  local seqlens = {}
  for i, v in ipairs(t.seqlens or {}) do seqlens[i] = string.char(v) end
  return string.char(t.kernel, t.entry or 0, t.flags or FLAG.lse) .. len_field(t.batch) ..
    len_field(t.seq_q) .. len_field(t.seq_k) .. strides .. string.char(t.threads or 0) ..
    le(t.seed or 12345, 4) .. table.concat(seqlens) .. (t.table or "") .. (t.rope or "")
end

-- Q/K/V/O: a gap in every dim; mask: 0x80 + n is the literal stride n
local GAPS = "\1\2\3" .. "\0\5\0" .. "\4\0\1" .. "\2\2\2" .. "\0\3\1\0"
local BROADCAST_MASK = string.rep("\0", 12) .. "\0\0\128\128"  -- [Lq][Lk] for every b, h
local NEG_STRIDE = "\0\240" .. string.rep("\0", 14)              -- Q's s stride -1
local HUGE_STRIDE = "\0\0\248" .. le(2 ^ 50, 8) .. string.rep("\0", 13)

local args_seeds = {}
-- four per kernel, named after it (its config name less the "t_" of test configs)
for k, e in ipairs(KERNELS) do
  local name, kernel = e.name:gsub("^t_", ""), k - 1
  args_seeds[name .. "_prefill"] = args { kernel = kernel, batch = 2, seq_q = 19, seq_k = 37,
    seqlens = { 0, 5 } }
  args_seeds[name .. "_decode"] = args { kernel = kernel, batch = 1, seq_q = 1, seq_k = 300,
    seqlens = { 9 } }
  args_seeds[name .. "_strided_avx2"] = args { kernel = kernel, entry = 2, batch = 2, seq_q = 7,
    seq_k = 130, strides = GAPS, seqlens = { 3, 0x80 + 2 } }
  args_seeds[name .. "_scalar_tile_edge"] = args { kernel = kernel, entry = 3, batch = 1,
    seq_q = 97, seq_k = 129, flags = FLAG.lse + FLAG.sparse }
end
-- the others on the first kernel with what each needs
local function on(need, name, t)
  t.kernel = kernel_with(need, name)
  args_seeds[name] = args(t)
end
on("mask_bool", "mask_broadcast", { batch = 2, seq_q = 17, seq_k = 17, strides = BROADCAST_MASK })
on("mask_bias", "bias_broadcast_sparse", { batch = 2, seq_q = 16, seq_k = 40,
  strides = BROADCAST_MASK, flags = FLAG.sparse, seqlens = { 0, 0 } })
on("padding", "empty_seq_k", { batch = 2, seq_q = 3, seq_k = 0, seqlens = { 0, 0 } })
on("plain", "null_q", { batch = 1, seq_q = 4, seq_k = 4, flags = FLAG.q_null })
on("plain", "null_o", { batch = 1, seq_q = 4, seq_k = 4, flags = FLAG.o_null })
on("mask", "null_mask", { batch = 1, seq_q = 4, seq_k = 4, flags = FLAG.mask_null })
on("padding", "null_seqlens", { batch = 1, seq_q = 4, seq_k = 4, flags = FLAG.seqlens_null })
on("plain", "negative_stride", { batch = 1, seq_q = 4, seq_k = 4, strides = NEG_STRIDE })
on("plain", "huge_stride", { batch = 1, seq_q = 4, seq_k = 4, strides = HUGE_STRIDE })
on("padding", "seqlen_too_long", { batch = 2, seq_q = 4, seq_k = 9, seqlens = { 0, 0xF1 } })
-- paged: the first pages of each sequence evicted (-1) where no row sees them (a window of
-- fewer keys), and where rows do (ATTN_ERR_PAGE); an entry naming no page; no table
on("paged", "paged_evicted_unseen", { batch = 2, seq_q = 3, seq_k = 90, seqlens = { 0, 1 }, table = "\0\0\2\3" })
on("paged", "paged_evicted_seen", { batch = 1, seq_q = 3, seq_k = 9, seqlens = { 0 }, table = "\0\0\2\2" })
on("paged", "paged_bad_entry", { batch = 2, seq_q = 1, seq_k = 40, seqlens = { 0, 3 }, table = "\0\3\4\5\1" })
on("paged", "paged_null_table", { batch = 1, seq_q = 2, seq_k = 8, seqlens = { 0 }, table = "\0\0\1" })
-- a RoPE table of exactly the rows the positions need, one row short (ATTN_ERR_ROPE), 2 rows
-- (the positions need 6), no sin table; K/V blocks whose heads alias (head stride 0 blocks)
on("rope_table", "rope_rows_exact", { batch = 2, seq_q = 6, seq_k = 9, seqlens = { 9, 4 }, rope = "\0\0" })
on("rope_table", "rope_row_short", { batch = 2, seq_q = 6, seq_k = 9, seqlens = { 9, 4 }, rope = "\7\0" })
on("rope_table", "rope_rows_2", { batch = 1, seq_q = 6, seq_k = 9, seqlens = { 9 }, rope = "\130\0" })
on("rope_table", "rope_null_sin", { batch = 1, seq_q = 6, seq_k = 9, seqlens = { 9 }, rope = "\0\2" })
on("block_kv", "block_kv_aliased_heads", { batch = 2, seq_q = 5, seq_k = 40, seqlens = { 0, 9 },
  strides = "\0\0\0" .. "\128\0\0" .. "\128\0\0" .. string.rep("\0", 7) })
on("plain", "negative_threads", { batch = 1, seq_q = 4, seq_k = 4, threads = 255 })
on("linear_state", "null_state_s", { batch = 1, seq_q = 4, seq_k = 4, flags = FLAG.mask_null, seqlens = { 4 } })
on("linear_state", "null_state_z", { batch = 1, seq_q = 4, seq_k = 4, flags = FLAG.sparse, seqlens = { 4 } })
-- a classic call with batch 0 and seq_q 2^56 (0xF8: the next 8 bytes as an int64), seq_k
-- 33, every stride contiguous (the missing bytes read as 0): the kernel has nothing to do;
-- the harness once built the reference's strides from seq_q and overflowed them
args_seeds.classic_batch_0_huge_seq_q = string.char(kernel_with("classic", "classic_batch_0_huge_seq_q"), 0, 0) ..
  "\0\248\0\0\0\0\0\0\0\1\33"

-- Raw inputs, kept byte for byte.  Their first byte was written for the
-- kernel list of the time (0 t_everything, 1 t_bool_mask, 2 t_odd_dims,
-- 3 t_small_tiles, 4 t_tile48) and now picks KERNELS[byte % #KERNELS]
-- (when this was written: t_d111_mqa_window t_everything t_odd_dims t_tile48):
--  * regress_variant_checks_first (byte 3, found on t_small_tiles, now
--    t_tile48): an ISA variant's entry computing with seq_q = INT64_MAX
--    before its argument check.  Any kernel with ISA variants shows it
--    (every test config has some), so whatever byte 3 picks makes sense.
--  * regress_empty_mask_huge_stride (byte 4, found on t_tile48, now
--    t_d111_mqa_window): a [B][Hq][Lq][0] mask whose huge query stride was
--    accepted because the mask has no elements.  Only a kernel with a mask
--    tensor reads mask strides, so where byte 4 picks one without a bool
--    mask (as t_tile48 had) the input is also written as ..._retargeted,
--    its first byte set to the first kernel with one.
--  * batch_2_62_plus_1 and seq_k_int64_min (byte 2, written for t_odd_dims,
--    still t_odd_dims): a batch of 2^62 + 1 and a seq_k of INT64_MIN, length
--    checks every kernel makes, so any kernel makes sense.
--  * regress_block_kv_value_strides (byte 249, found on t_shared_kv_q4, 11 of 17 then): a
--    paged q4_0 cache of no pages (num_pages 0, batch 0) whose head stride of about 2^57
--    blocks the kernel accepts; as values (times 32) the reference's copy no longer fit.
local raw_seeds = {
  { name = "regress_block_kv_value_strides", need = "block_kv",
    bytes = "\249\0\0\0\2\16\2\7\130\0\253\3\0\5\0\4\0\1\2\2\2\171\3\1\0\0\57\48\0\0\3\130" },
  { name = "regress_variant_checks_first", bytes = "\3\49\3\144\242\0\3" },
  { name = "regress_empty_mask_huge_stride", need = "mask_bool",
    bytes = "\4\3\144\1\36\0\0\64" .. string.rep("\0", 5) .. "\1" .. string.rep("\0", 5) ..
      "\255\239\0\0\0\0\0\57\48\0\0\0" },
  { name = "batch_2_62_plus_1", bytes = "\2\0\16\244\4\4" .. string.rep("\0", 21) },
  { name = "seq_k_int64_min", bytes = "\2\0\16\1\4\241" .. string.rep("\0", 21) },
}
for _, r in ipairs(raw_seeds) do
  args_seeds[r.name] = r.bytes
  if r.need and not NEEDS[r.need][2](kernel_of(r.bytes).cfg) then
    args_seeds[r.name .. "_retargeted"] = string.char(kernel_with(r.need, r.name)) .. r.bytes:sub(2)
  end
end

-- ---- writing ---------------------------------------------------------------

assert(os.execute("mkdir -p " .. ROOT .. "/fuzz_npy " .. ROOT .. "/fuzz_args"))
for name, bytes in pairs(npy_seeds) do write("fuzz_npy", name .. ".npy", bytes) end
for name, bytes in pairs(args_seeds) do write("fuzz_args", name, bytes) end

-- fuzz_args/ holds only what this script writes: the seeds of kernels no
-- longer in FUZZ_KERNELS go
local ls = assert(io.popen("ls " .. ROOT .. "/fuzz_args"))
local stale = {}
for name in ls:lines() do
  if not args_seeds[name] then stale[#stale + 1] = name end
end
ls:close()
table.sort(stale)
for _, name in ipairs(stale) do
  assert(os.remove(ROOT .. "/fuzz_args/" .. name))
  io.write("make_corpus: removed ", ROOT, "/fuzz_args/", name, "\n")
end
