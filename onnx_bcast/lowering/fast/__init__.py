"""The engine's speed-ups, each sound where it falls back: hidden inference, shared facts, replayed rewrites."""
