-- Luong attention, dot score: s_i . h_j, with padding; an odd dim.
return {
  name = "t_luong_dot",
  kind = "luong",
  score = "dot",
  query_dim = 33,
  padding = true,
}
