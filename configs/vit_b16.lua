-- ViT-B/16: 12 heads, head dim 64, bidirectional over 197 tokens (196 patches + class token).
return {
  name = "vit_b16",
  heads_q = 12,
  head_dim = 64,
}
