"""`elk-opt models`: the built-in model zoo with its published configurations."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="list the built-in model zoo", description=__doc__)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from elk_opt.frontend.zoo import describe, model_names

    for name in model_names():
        print(f"{name:<12} {describe(name)}")
    return 0
