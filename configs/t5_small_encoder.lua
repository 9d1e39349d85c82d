-- T5 (small) encoder self-attention: 8 heads, head dim 64, bidirectional, padded, unscaled, T5's learned
-- relative position bias (32 buckets up to distance 128, both directions; the table [32][8] is the first
-- layer's relative_attention_bias weight, passed at run time). `attngen import-hf` writes it and its
-- decoder and cross-attention siblings from the model's config.json.
return {
  name = "t5_small_encoder",
  heads_q = 8,
  head_dim = 64,
  padding = true,
  scale = 1.0,
  rel_bias = { kind = "t5", buckets = 32, max_distance = 128, bidirectional = true },
}
