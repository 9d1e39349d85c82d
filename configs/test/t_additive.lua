-- Additive (Bahdanau) attention: the plain case, dims that are multiples of
-- the vector widths, no bias, no padding, no mask.
return {
  name = "t_additive",
  kind = "additive",
  query_dim = 16,
  key_dim = 32,
  attn_dim = 24,
}
