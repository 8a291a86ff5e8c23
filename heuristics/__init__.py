"""The Elk paper's schedulers and baselines: each takes an instance and returns a plan."""
