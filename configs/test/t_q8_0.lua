-- K/V as llama.cpp's q8_0 blocks behind bf16 Q and O: causal, GQA (4 query
-- heads a kv head) and a sliding window, with D = 64 (two blocks a row).
-- The reference reads the dequantized values.
return {
  name = "t_q8_0",
  heads_q = 8,
  heads_kv = 2,
  head_dim = 64,
  causal = true,
  sliding_window = 24,
  dtype = { q = "bf16", kv = "q8_0", o = "bf16" },
}
