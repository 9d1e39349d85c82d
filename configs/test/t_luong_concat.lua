-- Luong attention, concat score: v . tanh(W [h_j; s_i] + b) (the bias is on
-- by default), odd dims, padding and a bool mask.
return {
  name = "t_luong_concat",
  kind = "luong",
  score = "concat",
  query_dim = 10,
  key_dim = 21,
  attn_dim = 15,
  padding = true,
  mask = "bool",
}
