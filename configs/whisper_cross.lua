-- Whisper (small) decoder cross-attention: 12 heads, head dim 64, text queries over the 1500 encoder frames, padded, no causal mask.
return {
  name = "whisper_cross",
  heads_q = 12,
  head_dim = 64,
  padding = true,
}
