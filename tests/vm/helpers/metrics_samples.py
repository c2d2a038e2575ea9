#!/usr/bin/python3
"""tests/vm/helpers/metrics_samples.py: the samples of `nsctl metrics` text (the Prometheus
text format nsctl(1), METRICS, describes), as the VM scenarios read them.

    python3 tests/vm/helpers/metrics_samples.py FILE
        prints every sample as 'SERIES VALUE', one a line; exit status 1, saying which line,
        when the text is not what the textfile collector could read (below)
    import metrics_samples; metrics_samples.samples(PATH) -> {SERIES: VALUE}

nsd-metrics.sh compares these samples with `nsctl status --json`; lib/metrics.sh reads a file
with it where the VM has no promtool (Debian's prometheus package). It refuses: a sample line
that is not SERIES VALUE (SERIES a name with optional {label="value",...}, VALUE a number); a
series twice; a sample of no family a '# TYPE' line declared before it (a histogram's
_bucket, _sum and _count belong to it); a counter family whose name does not end in _total
(promtool's own complaint); text that does not end with '# EOF'.
"""
import re
import sys

SERIES = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*\})?')


class Bad(Exception):
    pass


def samples(path):
    types = {}
    out = {}
    lines = open(path).read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or lines[-1] != "# EOF":
        raise Bad(f"{path}: the last line is not '# EOF'")
    for n, line in enumerate(lines[:-1], 1):
        if line.startswith("#"):
            words = line.split(None, 3)
            if len(words) >= 4 and words[1] == "TYPE":
                family, kind = words[2], words[3]
                if kind == "counter" and not family.endswith("_total"):
                    raise Bad(f"{path}:{n}: counter {family} does not end in _total")
                types[family] = kind
            continue
        if not line.strip():
            continue
        try:
            name, value = line.rsplit(None, 1)
            float(value)
        except ValueError:
            raise Bad(f"{path}:{n}: not a sample: {line!r}")
        m = SERIES.fullmatch(name)
        if not m:
            raise Bad(f"{path}:{n}: not a series name: {name!r}")
        metric = m.group(1)
        family = metric
        for suffix in ("_bucket", "_sum", "_count"):
            base = metric[: -len(suffix)]
            if metric.endswith(suffix) and types.get(base) == "histogram":
                family = base
        if family not in types:
            raise Bad(f"{path}:{n}: {metric} has no '# TYPE' line before it")
        if name in out:
            raise Bad(f"{path}:{n}: {name} twice")
        out[name] = value
    return out


if __name__ == "__main__":
    try:
        for k, v in samples(sys.argv[1]).items():
            print(k, v)
    except (Bad, OSError) as e:
        print(f"metrics_samples: {e}", file=sys.stderr)
        sys.exit(1)
