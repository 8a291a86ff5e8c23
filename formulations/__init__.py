"""Exact CP-SAT and ILP models of DESIGN.md sections 4-5, and lower bounds."""
