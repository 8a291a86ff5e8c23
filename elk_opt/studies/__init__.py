"""Studies users run: the optimality-gap study, design-space sweeps, regression baselines."""
