-- Luong attention, general score: h_j . (W s_i), Ds != Dh, a bool mask.
return {
  name = "t_luong_general",
  kind = "luong",
  score = "general",
  query_dim = 24,
  key_dim = 17,
  mask = "bool",
}
