--- The generator's version: part of every generated banner and cache key.
return { string = "0.1.0" }
