-- Longformer-base: 12 heads, head dim 64, sliding window of 512 (256 keys each side), global tokens (e.g. [CLS]) see and are seen by everything, padded batches.
return {
  name = "longformer_base",
  heads_q = 12,
  head_dim = 64,
  window = { left = 256, right = 256 },
  global_tokens = 1,
  padding = true,
}
