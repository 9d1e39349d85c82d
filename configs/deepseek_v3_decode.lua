-- DeepSeek-V3 (and Kimi K2, with 64 query heads) decoding over its latent cache, in the absorbed
-- form of multi-head latent attention that FlashMLA runs: each token's cache row is its latent
-- c_KV (kv_lora_rank = 512) followed by its rotary key (qk_rope_head_dim = 64), one row shared by
-- all 128 query heads (W_UK folded into the queries), and the values are the first 512 values of
-- the same row (shared_kv; W_UV folded into the output projection).  Every tensor bf16, with bf16
-- products where the CPU has them.  The scale is the model's: 1 / sqrt(192) times yarn's mscale
-- squared (attngen import-hf tests/hf/deepseek_v3.json).
return {
  name = "deepseek_v3_decode",
  heads_q = 128,
  heads_kv = 1,
  head_dim = 576, -- kv_lora_rank + qk_rope_head_dim = 512 + 64
  head_dim_v = 512, -- kv_lora_rank
  shared_kv = true,
  causal = true,
  scale = 0.13523377886088009, -- 1 / sqrt(192) * mscale^2, mscale = 0.1 * ln(40) + 1 (yarn, factor 40)
  dtype = "bf16",
  matmul = "bf16",
}
