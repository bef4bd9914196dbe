"""projector from Python: the performance projection tool's commands as functions.

Every function runs the same command line as the `project` executable (no second
implementation): keyword arguments are its flags with dashes as underscores, results are
objects over exactly the command's JSON document, bad input raises InputError with the
command line's message. The GIL is released while a command runs.

    import projector
    r = projector.project(model="llama3.1-70b", gpu_arch="h100-sxm", num_gpus=64, tp=8,
                          seq_len=8192, global_batch=128, sequence_parallel=True)
    r.tokens_per_s_per_gpu, r.step_time_s, r.to_dict(), r.to_json()
    projector.search(model="llama3.1-8b", gpu_arch="h100-sxm", num_gpus=8, seq_len=2048,
                     global_batch=64).records()          # one dict per layout, for pandas
    projector.serve(model="llama3.1-8b", gpu_arch="h100-sxm", qps=4).ttft_ms["p90"]

A model, GPU profile or scenario may be a library name, a file path or a dict (written to a
temporary JSON file for the call). Fields of each document: docs/ (the command's JSON).
"""

import json
import os
import re
import tempfile

from . import _projector

__all__ = [
    "InputError", "CheckFailed", "InternalError", "Result", "Projection", "ServeResult",
    "SearchResult", "ScaleResult", "ScalePoint", "ValidateResult", "CompareResult",
    "Latency", "run", "project", "search",
    "validate", "scale", "compare", "serve", "network", "estimate_gemm", "estimate_attention",
    "estimate_collective", "estimate_convnet",
]


class InputError(ValueError):
    """Bad input (the command line's exit code 2): `message` as `project` prints it, `field` the
    flag ("--tp") or JSON pointer ("/training/seq_len") it names, `file` the file it names, and
    `line`, `column` where in that file (YAML files and syntax errors; else None)."""

    def __init__(self, message, field=None, file=None, line=None, column=None):
        super().__init__(message)
        self.message = message
        self.field = field
        self.file = file
        self.line = line
        self.column = column


class CheckFailed(RuntimeError):
    """A check the call asked for failed (exit code 3: an accuracy floor, --require-fit)."""

    def __init__(self, message, result=None):
        super().__init__(message)
        self.message = message
        self.result = result


class InternalError(RuntimeError):
    """Anything else (exit code 1)."""


_FLAG = re.compile(r"^--([a-z0-9-]+): ")
_FILE = re.compile(r"^(?:--[a-z0-9-]+: )?([^\s:]+\.(?:jsonl|json|yaml|yml|csv))"
                   r"(?::(\d+))?(?::(\d+))?: (/[^\s:]*)?")


def _input_error(message):
    field = None
    file = None
    line = column = None
    m = _FILE.match(message)
    if m:
        file = m.group(1)
        line = int(m.group(2)) if m.group(2) else None
        column = int(m.group(3)) if m.group(3) else None
        field = m.group(4)
    m = _FLAG.match(message)
    if m and field is None:
        field = "--" + m.group(1)
    return InputError(message, field=field, file=file, line=line, column=column)


def run(*args):
    """Runs `project ARGS...` and returns what it prints on stdout; raises on failure."""
    code, out, err = _projector.run([str(a) for a in args])
    if code == 0:
        return out
    message = err.strip()
    for line in message.splitlines():
        if line.startswith("project: error: "):
            message = line[len("project: error: "):]
    if code == 2:
        raise _input_error(message)
    if code == 3:
        raise CheckFailed(message, result=out)
    raise InternalError(message)


class Result:
    """A command's JSON document: top-level fields as attributes and items."""

    def __init__(self, document):
        self._doc = document

    def __getattr__(self, name):
        try:
            return self._doc[name]
        except KeyError:
            raise AttributeError(
                f"no field {name!r}; fields: {', '.join(sorted(self._doc))}") from None

    def __getitem__(self, key):
        return self._doc[key]

    def __contains__(self, key):
        return key in self._doc

    def keys(self):
        return self._doc.keys()

    def to_dict(self):
        """The document as plain Python data (a deep copy)."""
        return json.loads(json.dumps(self._doc))

    def to_json(self, indent=2):
        """The document as JSON text, as `--format json` prints it."""
        return json.dumps(self._doc, indent=indent)

    def records(self):
        """The document's rows as a list of flat dicts (search layouts, scale points, validate
        cases, serve timeline, compare sides), which pandas.DataFrame takes directly."""
        for key in ("layouts", "points", "cases", "figures", "sides", "splits", "timeline"):
            rows = self._doc.get(key) if isinstance(self._doc, dict) else None
            if isinstance(rows, list):
                return [_flatten(r) for r in rows]
        return [_flatten(self._doc)]

    def __repr__(self):
        return f"Result({', '.join(sorted(self._doc)[:8])}{', ...' if len(self._doc) > 8 else ''})"


class Projection(Result):
    """`project`'s document with its headline figures typed."""

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return float(self._doc["tokens_per_s_per_gpu"])

    @property
    def step_time_s(self) -> float:
        return float(self._doc["step_time_s"])

    @property
    def mfu(self) -> float:
        return float(self._doc["mfu"])

    @property
    def peak_memory_gib(self) -> float:
        return float(self._doc["peak_memory_bytes"]) / 2**30

    @property
    def fits_in_memory(self) -> bool:
        return bool(self._doc["fits_in_memory"])


class Latency:
    """Mean and percentiles of one serving latency, in ms."""

    def __init__(self, stats):
        self.count = int(stats["count"])
        self.mean = float(stats["mean"])
        self.p50 = float(stats["p50"])
        self.p90 = float(stats["p90"])
        self.p99 = float(stats["p99"])

    def __getitem__(self, key):
        return getattr(self, key)

    def __repr__(self):
        return f"Latency(mean={self.mean:.2f}, p50={self.p50:.2f}, p90={self.p90:.2f}, p99={self.p99:.2f})"


class ServeResult(Result):
    """`project serve`'s document with its latencies and throughput typed."""

    @property
    def ttft_ms(self) -> Latency:
        return Latency(self._doc["ttft_ms"])

    @property
    def tpot_ms(self) -> Latency:
        return Latency(self._doc["tpot_ms"])

    @property
    def e2e_ms(self) -> Latency:
        return Latency(self._doc["e2e_ms"])

    @property
    def completed(self) -> int:
        return int(self._doc["completed"])

    @property
    def requests_per_s(self) -> float:
        return float(self._doc["requests_per_s"])

    @property
    def output_tokens_per_s_per_gpu(self) -> float:
        return float(self._doc["output_tokens_per_s_per_gpu"])


class SearchResult(Result):
    """`project search`'s document: the ranked layouts, best first, and how many were looked at."""

    @property
    def best(self) -> dict:
        """The best layout's row (the first of `layouts`)."""
        return self._doc["layouts"][0]

    @property
    def best_command(self) -> str:
        """The `project` command that projects the best layout."""
        return self._doc["best_command"]

    @property
    def candidates_enumerated(self) -> int:
        return int(self._doc["candidates_enumerated"])

    @property
    def candidates_evaluated(self) -> int:
        return int(self._doc["candidates_evaluated"])

    @property
    def removed(self) -> dict:
        """Candidates removed, by constraint name."""
        return dict(self._doc["removed"])


class ScalePoint(Result):
    """One GPU count of a scaling study."""

    @property
    def num_gpus(self) -> int:
        return int(self._doc["num_gpus"])

    @property
    def found(self) -> bool:
        """Whether a layout fits at this count (else `why_not` says why)."""
        return bool(self._doc["found"])

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return float(self._doc.get("tokens_per_s_per_gpu", 0.0))

    @property
    def efficiency(self) -> float:
        return float(self._doc.get("efficiency", 0.0))


class ScaleResult(Result):
    """`project scale`'s document: one point per GPU count, the breakdown point and Amdahl's fit."""

    @property
    def points(self) -> list:
        return [ScalePoint(p) for p in self._doc["points"]]

    @property
    def breakdown_point(self):
        """The first GPU count under 70% efficiency, or None."""
        return self._doc.get("breakdown_point")

    @property
    def serial_fraction(self) -> float:
        return float(self._doc["serial_fraction"])


class ValidateResult(Result):
    """`project validate`'s document: every case, the summary and the tables by group."""

    @property
    def median_abs_error_pct(self) -> float:
        return float(self._doc["summary"]["median_abs_error_pct"])

    @property
    def within_20_pct(self) -> float:
        """The share of cases within 20% of their measurement, in %."""
        return float(self._doc["summary"]["within_20_pct"])

    @property
    def count(self) -> int:
        return int(self._doc["summary"]["count"])


class CompareResult(Result):
    """`project compare`'s document: the sides, term by term, and the causes of the difference."""

    @property
    def sides(self) -> list:
        return [Result(side) for side in self._doc["sides"]]

    @property
    def causes(self) -> list:
        return list(self._doc["causes"])


def _flatten(row, prefix=""):
    out = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


class _Args:
    """Keyword arguments as command-line flags; dict values become temporary JSON files."""

    def __init__(self, kwargs):
        self.argv = []
        self._files = []
        for key, value in kwargs.items():
            if value is None:
                continue
            flag = "--" + key.replace("_", "-")
            if value is True:
                self.argv.append(flag)
            elif value is False:
                self.argv.append(f"{flag}=false")
            elif isinstance(value, dict):
                self.argv += [flag, self._file(value)]
            elif isinstance(value, (list, tuple)):
                self.argv += [flag, ",".join(str(v) for v in value)]
            else:
                self.argv += [flag, str(value)]

    def _file(self, document):
        handle, path = tempfile.mkstemp(suffix=".json", prefix="projector-")
        with os.fdopen(handle, "w") as f:
            json.dump(document, f)
        self._files.append(path)
        return path

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for path in self._files:
            os.unlink(path)


def _json_command(words, kwargs, kind=None):
    with _Args(kwargs) as a:
        return (kind or Result)(json.loads(run(*words, *a.argv, "--format", "json")))


def project(scenario=None, **flags):
    """One projection (`project`): scenario is a scenario file or dict; flags override it."""
    if scenario is not None:
        flags = {"scenario": scenario, **flags}
    return _json_command([], flags, Projection)


def search(**flags):
    """The layout search (`project search`); .records() gives one row per ranked layout."""
    return _json_command(["search"], {"quiet": True, **flags}, SearchResult)


def validate(cases, **flags):
    """Projected against measured over a cases file (`project validate --cases FILE`)."""
    return _json_command(["validate"], {"cases": cases, **flags}, ValidateResult)


def scale(num_gpus, **flags):
    """One job over GPU counts (`project scale`); .records() gives one row per count."""
    return _json_command(["scale"], {"num_gpus": num_gpus, "quiet": True, **flags}, ScaleResult)


def compare(*files, **flags):
    """Projections side by side (`project compare`): files, a file and flags, or gpu_arch=[...]."""
    with _Args(flags) as a:
        return CompareResult(json.loads(run("compare", *files, *a.argv, "--format", "json")))


def serve(**flags):
    """An inference deployment under a workload (`project serve`); a ServeResult unless a
    latency-target search or a disaggregated comparison was asked for (their documents differ)."""
    searched = any(flags.get(k) for k in ("max_qps", "search_layouts", "disaggregate"))
    return _json_command(["serve"], {"quiet": True, **flags}, None if searched else ServeResult)


def network(action, **flags):
    """A network (`project network show|route|export|validate`): action and its flags, e.g.
    network("route", network="networks/mesh4x4.json", from_=1, to=7); a trailing underscore
    spares a Python keyword."""
    flags = {k[:-1] if k.endswith("_") else k: v for k, v in flags.items()}
    return _json_command(["network", action], flags)


def estimate_gemm(**flags):
    """One GEMM (`project estimate gemm`)."""
    return _json_command(["estimate", "gemm"], flags)


def estimate_attention(**flags):
    """One flash-attention call (`project estimate attention`)."""
    return _json_command(["estimate", "attention"], flags)


def estimate_collective(**flags):
    """One collective (`project estimate collective`)."""
    return _json_command(["estimate", "collective"], flags)


def estimate_convnet(**flags):
    """A convolutional network's data-parallel training step (`project estimate convnet`):
    estimate_convnet(model="resnet50", gpu_arch="v100", batch=256, num_gpus=8)."""
    return _json_command(["estimate", "convnet"], flags)
