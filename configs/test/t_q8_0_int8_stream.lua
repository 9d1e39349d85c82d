-- matmul = "int8" on a q8_0 cache without score terms: at Lq = 1 the streaming
-- path's block step (lib/decode_qblock) scores its 16 keys along the lanes on
-- AVX-512 and AVX2 (isa/int8.lua's keys16: the K codes transposed, 8 vpdpbusd
-- a row and block), GQA with 2 rows a kv head, D = 64 (two blocks a row).  The
-- reference computes on the same quantized Q.
return {
  name = "t_q8_0_int8_stream",
  heads_q = 4,
  heads_kv = 2,
  head_dim = 64,
  causal = true,
  dtype = { kv = "q8_0" },
  matmul = "int8",
}
