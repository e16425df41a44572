"""Hardware: GPU and system specs with cited datasheet numbers (spec.py), presets (presets.py,
systems.py), pricing profiles (profiles.py) and the one error type users see (errors.py).
Import each name from its module."""
