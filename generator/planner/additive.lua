--- kind = "additive": planner/classic.lua plans both classic kinds.
return require("planner.classic")
