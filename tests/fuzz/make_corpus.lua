-- Writes the seed corpora of the libFuzzer targets (tests/fuzz/fuzz_*.c):
--   tests/fuzz/corpus/fuzz_npy/   small valid and near-valid .npy files
--   tests/fuzz/corpus/fuzz_args/  encoded attn_args (layout: fuzz_args.c)
-- Deterministic; run from the repository root after changing an encoding:
--   luajit tests/fuzz/make_corpus.lua
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

-- ---- attn_args seeds -------------------------------------------------------

-- Kernel indices follow FUZZ_KERNELS in the Makefile:
-- 0 t_everything, 1 t_bool_mask, 2 t_odd_dims, 3 t_small_tiles, 4 t_tile48.
local FLAG = { q_null = 1, o_null = 8, lse = 16, seqlens_null = 32, mask_null = 64, sparse = 128 }

local function len_field(v)
  if v < 224 then return string.char(v) end
  local x = v - 224
  assert(x < 16 * 256)
  return string.char(0xE0 + math.floor(x / 256), x % 256)
end

-- fields: kernel, entry, flags, batch, seq_q, seq_k, strides (16 stride
-- fields as byte strings, innermost first per tensor), threads, seed, seqlens
local function args(t)
  local strides = t.strides or string.rep("\0", 16)
  assert(#strides >= 16)
  local seqlens = {}
  for i, v in ipairs(t.seqlens or {}) do seqlens[i] = string.char(v) end
  return string.char(t.kernel, t.entry or 0, t.flags or FLAG.lse) .. len_field(t.batch) ..
    len_field(t.seq_q) .. len_field(t.seq_k) .. strides .. string.char(t.threads or 0) ..
    le(t.seed or 12345, 4) .. table.concat(seqlens)
end

-- Q/K/V/O: a gap in every dim; mask: 0x80 + n is the literal stride n
local GAPS = "\1\2\3" .. "\0\5\0" .. "\4\0\1" .. "\2\2\2" .. "\0\3\1\0"
local BROADCAST_MASK = string.rep("\0", 12) .. "\0\0\128\128"  -- [Lq][Lk] for every b, h
local NEG_STRIDE = "\0\240" .. string.rep("\0", 14)              -- Q's s stride -1
local HUGE_STRIDE = "\0\0\248" .. le(2 ^ 50, 8) .. string.rep("\0", 13)

local args_seeds = {}
local kernel_names = { "everything", "bool_mask", "odd_dims", "small_tiles", "tile48" }
for k = 0, 4 do
  local name = kernel_names[k + 1]
  args_seeds[name .. "_prefill"] = args { kernel = k, batch = 2, seq_q = 19, seq_k = 37,
    seqlens = { 0, 5 } }
  args_seeds[name .. "_decode"] = args { kernel = k, batch = 1, seq_q = 1, seq_k = 300,
    seqlens = { 9 } }
  args_seeds[name .. "_strided_avx2"] = args { kernel = k, entry = 2, batch = 2, seq_q = 7,
    seq_k = 130, strides = GAPS, seqlens = { 3, 0x80 + 2 } }
  args_seeds[name .. "_scalar_tile_edge"] = args { kernel = k, entry = 3, batch = 1,
    seq_q = 97, seq_k = 129, flags = FLAG.lse + FLAG.sparse }
end
args_seeds.mask_broadcast = args { kernel = 1, batch = 2, seq_q = 17, seq_k = 17,
  strides = BROADCAST_MASK }
args_seeds.bias_broadcast_sparse = args { kernel = 0, batch = 2, seq_q = 16, seq_k = 40,
  strides = BROADCAST_MASK, flags = FLAG.sparse, seqlens = { 0, 0 } }
args_seeds.empty_seq_k = args { kernel = 0, batch = 2, seq_q = 3, seq_k = 0, seqlens = { 0, 0 } }
args_seeds.null_q = args { kernel = 2, batch = 1, seq_q = 4, seq_k = 4, flags = FLAG.q_null }
args_seeds.null_o = args { kernel = 2, batch = 1, seq_q = 4, seq_k = 4, flags = FLAG.o_null }
args_seeds.null_mask = args { kernel = 1, batch = 1, seq_q = 4, seq_k = 4, flags = FLAG.mask_null }
args_seeds.null_seqlens = args { kernel = 3, batch = 1, seq_q = 4, seq_k = 4,
  flags = FLAG.seqlens_null }
args_seeds.negative_stride = args { kernel = 2, batch = 1, seq_q = 4, seq_k = 4,
  strides = NEG_STRIDE }
args_seeds.huge_stride = args { kernel = 2, batch = 1, seq_q = 4, seq_k = 4,
  strides = HUGE_STRIDE }
args_seeds.seqlen_too_long = args { kernel = 3, batch = 2, seq_q = 4, seq_k = 9,
  seqlens = { 0, 0xF1 } }
args_seeds.negative_threads = args { kernel = 2, batch = 1, seq_q = 4, seq_k = 4, threads = 255 }
-- inputs that found bugs: an ISA variant's entry computing with seq_q =
-- INT64_MAX before its argument check, and a [B][Hq][Lq][0] mask whose huge
-- query stride was accepted because the mask has no elements
args_seeds.regress_variant_checks_first = "\3\49\3\144\242\0\3"
args_seeds.regress_empty_mask_huge_stride = "\4\3\144\1\36\0\0\64" .. string.rep("\0", 5) ..
  "\1" .. string.rep("\0", 5) .. "\255\239\0\0\0\0\0\57\48\0\0\0"
args_seeds.batch_2_62_plus_1 = "\2\0\16\244\4\4" .. string.rep("\0", 21)
args_seeds.seq_k_int64_min = "\2\0\16\1\4\241" .. string.rep("\0", 21)

assert(os.execute("mkdir -p " .. ROOT .. "/fuzz_npy " .. ROOT .. "/fuzz_args"))
for name, bytes in pairs(npy_seeds) do write("fuzz_npy", name .. ".npy", bytes) end
for name, bytes in pairs(args_seeds) do write("fuzz_args", name, bytes) end
