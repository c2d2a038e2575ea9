# bench/lib/benchdata.py: what the tables (bench/*/table) share: the "key value" result files
# of the bench programs.
"""Read the "key value" lines that the bench programs print."""


def load(path):
    """A dict of a result file's lines, key -> the rest of the line; {} for a missing file."""
    d = {}
    try:
        with open(path) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition(" ")
                if k:
                    d[k] = v
    except OSError:
        pass
    return d


def num(d, k):
    """The first word of d[k] as a float, None when it is missing or not a number."""
    try:
        return float(d[k].split()[0])
    except (KeyError, ValueError, IndexError):
        return None
