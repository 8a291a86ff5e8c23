"""The two kinds of expected failure; the CLI turns both into one line and exit code 2."""


class InputError(Exception):
    """A file that cannot be used: the message names the file, the field and the value."""


class UsageError(Exception):
    """A request that cannot be carried out as asked: the message says why."""
