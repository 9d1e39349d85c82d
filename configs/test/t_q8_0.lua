-- K/V as llama.cpp's q8_0 blocks behind bf16 Q and O: causal, GQA (4 query
-- heads a kv head) and a sliding window, with D = 64 (two blocks a row).
-- The reference reads the dequantized values.  qk_norm (x w, Qwen3's form) on the bf16 query rows
-- and the appended key rows, without RoPE.
return {
  name = "t_q8_0",
  heads_q = 8,
  heads_kv = 2,
  head_dim = 64,
  causal = true,
  sliding_window = 24,
  dtype = { q = "bf16", kv = "q8_0", o = "bf16" },
  qk_norm = { eps = 1e-6 },
}
