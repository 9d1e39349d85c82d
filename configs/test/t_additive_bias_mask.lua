-- Additive attention with every option: the bias inside the tanh, padding,
-- a bool mask, and odd dims (vector tails on every ISA and every
-- projection).
return {
  name = "t_additive_bias_mask",
  kind = "additive",
  query_dim = 7,
  key_dim = 13,
  attn_dim = 19,
  bias = true,
  padding = true,
  mask = "bool",
}
