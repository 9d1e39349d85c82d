-- Luong general attention over an f16 encoder (H and W in f16) behind f32
-- decoder states and context.
return {
  name = "t_luong_f16",
  kind = "luong",
  score = "general",
  query_dim = 18,
  key_dim = 30,
  padding = true,
  dtype = { q = "f32", kv = "f16", o = "f32" },
}
