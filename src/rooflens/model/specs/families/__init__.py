"""One module per model family Hugging Face import understands: each maps a config.json onto
ModelSpec fields (model/specs/hf_import.py registers them by architecture)."""
