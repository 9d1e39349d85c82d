-- K/V as llama.cpp's q4_0 blocks behind f16 Q and f32 O: padding (ragged
-- key lengths) and D != Dv (32 and 96: one and three blocks a row).  The
-- reference reads the dequantized values.
return {
  name = "t_q4_0",
  heads_q = 4,
  heads_kv = 4,
  head_dim = 32,
  head_dim_v = 96,
  padding = true,
  dtype = { q = "f16", kv = "q4_0", o = "f32" },
}
