"""Chip preset files (TOML); loaded by elk_opt.frontend.chips."""
