"""Exact CP-SAT and ILP models of docs/spec.md sections 4-5, and lower bounds."""
