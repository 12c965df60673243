"""Shared parts of the host-side micro-benchmarks (scripts/micro_*.py): the
summary of a set of samples, the description of the host they ran on, and
writing the document."""
import json
import os
import platform
import statistics


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def summary(samples, scale, unit):
    """Median, min and max of per-call seconds, scaled to `unit`."""
    return {
        "median": statistics.median(samples) * scale,
        "min": min(samples) * scale,
        "max": max(samples) * scale,
        "unit": unit,
        "repetitions": len(samples),
    }


def host():
    """What a figure measured here depends on: the CPU, how many cores, how
    busy the host was, and the interpreter."""
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "load_average": list(os.getloadavg()),
        "python": platform.python_version(),
    }


def emit(doc, out):
    """Prints the document and writes it to `out` when given."""
    text = json.dumps(doc, indent=2) + "\n"
    if out:
        with open(out, "w") as f:
            f.write(text)
    print(text, end="")
