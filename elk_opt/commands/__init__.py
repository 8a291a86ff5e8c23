"""One module per `elk-opt` subcommand; each exposes `register(subparsers)`."""
