-- Mistral-7B v0.1 with every tensor in bf16 (its released weights' type, as PyTorch runs it):
-- 32 query heads, 8 KV heads, head dim 128, causal, sliding window of 4096 keys.
return {
  name = "mistral_7b_bf16",
  heads_q = 32,
  heads_kv = 8,
  head_dim = 128,
  causal = true,
  sliding_window = 4096, -- keys including the current one: window.left = 4095
  dtype = "bf16",
}
