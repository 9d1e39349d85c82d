-- Multi-head latent attention in its absorbed form (DeepSeek-V3's decode at
-- a small head count): one latent kv head of D = 576 (512 latent + 64
-- rotary) values, V the first 512 of them (shared_kv: one cache tensor, no
-- V argument), all bf16 with bf16 products (the avx512bf16 variant packs
-- the V panel from the K rows in pairs), causal, padding.
return {
  name = "t_mla",
  heads_q = 8,
  heads_kv = 1,
  head_dim = 576,
  head_dim_v = 512,
  shared_kv = true,
  causal = true,
  padding = true,
  dtype = "bf16",
  matmul = "bf16",
}
