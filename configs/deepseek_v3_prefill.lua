-- DeepSeek-V3's prefill, in the per-head form of multi-head latent attention: 128 heads, keys of
-- qk_nope_head_dim + qk_rope_head_dim = 192 values and values of v_head_dim = 128 (the latent
-- decompressed per head), causal, every tensor bf16 with bf16 products where the CPU has them.
-- The scale is the model's: 1 / sqrt(192) times yarn's mscale squared (attngen import-hf
-- tests/hf/deepseek_v3.json).
return {
  name = "deepseek_v3_prefill",
  heads_q = 128,
  head_dim = 192, -- qk_nope_head_dim + qk_rope_head_dim = 128 + 64
  head_dim_v = 128, -- v_head_dim
  causal = true,
  scale = 0.13523377886088009, -- 1 / sqrt(192) * mscale^2, mscale = 0.1 * ln(40) + 1 (yarn, factor 40)
  dtype = "bf16",
  matmul = "bf16",
}
