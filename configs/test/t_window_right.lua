-- Only the right side of the window bounded.
return { name = "t_window_right", heads_q = 2, head_dim = 16, window = { left = -1, right = 5 } }
