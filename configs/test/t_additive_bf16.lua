-- Additive attention stored in bf16 (S, H, U, the parameters and C), with
-- the bias and padding.
return {
  name = "t_additive_bf16",
  kind = "additive",
  query_dim = 12,
  key_dim = 20,
  attn_dim = 16,
  bias = true,
  padding = true,
  dtype = "bf16",
}
