"""Policy implementations, one per module: scripted, hf, anthropic, openai (imported lazily by load_policy)."""
