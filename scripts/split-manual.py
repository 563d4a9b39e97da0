#!/usr/bin/env python3
"""Split the one-file manual (README.md) into README.md, docs/*.md and CHANGELOG.md (issue 40).

A one-off maintenance tool, run once by whoever merges the branches that still edit the one-file
README. It is not part of the gateway: it lives outside gateway/, is not in package.json's "files",
and .dockerignore keeps it out of the image. Python 3 standard library only.

    python3 scripts/split-manual.py              # split README.md in place, write docs/ and CHANGELOG.md
    python3 scripts/split-manual.py --dry-run    # print where every heading goes; write nothing
    python3 scripts/split-manual.py --out /tmp/x # write the files under /tmp/x instead (a preview)

What it does, deterministically (the same README gives the same files, byte for byte):

1. Reads README.md and finds its `## ` and `### ` headings (never inside fenced code blocks).
2. Sends each to a file by MAPPING below. An unmapped `###` follows its `##`. An unmapped `##`
   stops the script with a list: add one line to MAPPING for each and run it again.
3. Writes each docs/*.md with one `# ` title (the first section's heading, promoted, or the title
   declared in FILES), a generated contents table, and the sections in README order, their
   headings promoted so the file's top sections are `## `.
4. Rewrites every link to a heading (`](#anchor)`) to the file that now holds that heading, using
   GitHub's anchor rule (lower case; characters other than letters, digits, spaces, `-` and `_`
   dropped; spaces to `-`; a repeated heading gets `-1`, `-2`): `docs/x.md#anchor` from README.md,
   `../README.md#anchor` from docs/, `x.md#anchor` between docs files. Links to other files of the
   repository are re-based for files that moved into docs/ (`test/...` becomes `../test/...`), and
   links from other Markdown files of the repository into README.md#anchor follow their heading.
5. Leaves README.md with the pitch, the kept sections (KEEP below), short stand-ins for the long
   kept sections (STUBS), and a contents table that links into every docs/ chapter.

It refuses to run on a README.md it has already split (the marker comment below), and fails on a
link to a heading that does not exist. Lines starting "warning:" in its report name what it could
not do (a REWORDS text or an INSERTED_HEADINGS line not found): read them, then run
`npx vitest run test/repository/`, which checks every link, anchor and contents table, that every
configuration key, error code and metric is still documented, and that README.md is at most 600
lines. Hand-written files (docs/glossary.md,
docs/troubleshooting.md) are never written; they are linked from the contents.
"""

from __future__ import annotations

import argparse
import os
import posixpath
import re
import subprocess
import sys
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = "README.md"
DROP = "(dropped: regenerated)"
MARKER = "<!-- split-manual: this README and docs/ were split by scripts/split-manual.py (issue 40). -->"

# --------------------------------------------------------------------------------------------------
# The mapping. One line per heading: (parent, heading, target file).
#   parent  None: the heading is a `## `; "Some ##": a `### ` under that `## `; "*": either, anywhere.
#   heading the exact text after the #s, or "re:<regex>" matched case-insensitively.
# An unmapped `### ` goes where its `## ` goes; an unmapped `## ` is an error (add a line here).
# The first matching line wins.
# --------------------------------------------------------------------------------------------------
MAPPING: list[tuple[str | None, str, str]] = [
    (None, "Contents", DROP),
    (None, "Quick start", README),
    (None, "How a request flows", README),
    (None, "Architecture", "docs/architecture.md"),
    (None, "Error catalogue", README),
    (None, "Rate limiting", "docs/rate-limiting.md"),
    ("Rate limiting", "Quotas", "docs/quotas-and-costs.md"),
    ("*", r"re:^organi[sz]ations?\b", "docs/quotas-and-costs.md"),
    ("*", r"re:^(budgets?|costs?)\b", "docs/quotas-and-costs.md"),
    (None, "Running several replicas: Redis, Sentinel, Cluster", "docs/scaling.md"),
    (None, "Using every core", "docs/scaling.md"),
    (None, "Load balancing and health", "docs/upstreams.md"),
    (None, r"re:^(upstream )?pools?\b", "docs/upstreams.md"),
    (None, "Retries, timeouts and circuit breaking", "docs/upstreams.md"),
    (None, r"re:^load shedding\b", "docs/load-shedding.md"),
    (None, "Configuration", "docs/configuration.md"),  # README keeps a stand-in (STUBS)
    ("Configuration", "GitHub-style clients (`Authorization: token`)", "docs/authentication.md"),
    (None, "TLS and HTTP/2", "docs/tls-and-cors.md"),
    (None, "CORS for browser clients", "docs/tls-and-cors.md"),
    (None, "Connect your authorization server", "docs/authentication.md"),
    (None, "JWT access tokens", "docs/authentication.md"),
    (None, "GET /rate_limit", "docs/rate-limiting.md"),
    ("*", r"re:^usage operations\b", "docs/usage-operations.md"),
    (None, "Behind your existing proxy", "docs/edge-proxy.md"),
    (None, "Operating", README),
    ("Operating", "Admin listener", README),
    ("Operating", "Metrics", "docs/operating.md"),
    ("Operating", "Logs", "docs/operating.md"),
    ("Operating", "Tracing", "docs/tracing.md"),
    ("Operating", "Alerts and dashboard", "docs/operating.md"),
    (None, "Deploying", "docs/deploying.md"),  # README keeps a stand-in (STUBS)
    (None, "Security", "docs/security.md"),
    (None, "Performance", "docs/performance.md"),
    (None, "Development", "docs/development.md"),
    (None, "Changelog", "CHANGELOG.md"),
]

# Generated files, in the order the README's contents lists them, with their `# ` title: None takes
# the heading of the file's first section (promoted to the title, its subsections to `## `).
FILES: dict[str, str | None] = {
    "docs/architecture.md": None,
    "docs/rate-limiting.md": None,
    "docs/quotas-and-costs.md": "Quotas, organisations and costs",
    "docs/usage-operations.md": None,
    "docs/scaling.md": "Replicas, Redis and every core",
    "docs/upstreams.md": "Upstreams: balancing, health, retries and timeouts",
    "docs/load-shedding.md": None,
    "docs/authentication.md": "Authentication: your authorization server, JWTs, GitHub-style clients",
    "docs/tls-and-cors.md": "TLS, HTTP/2 and CORS",
    "docs/edge-proxy.md": None,
    "docs/configuration.md": None,
    "docs/operating.md": "Operating: metrics, logs and alerts",
    "docs/tracing.md": None,
    "docs/deploying.md": None,
    "docs/security.md": None,
    "docs/performance.md": None,
    "docs/development.md": None,
    "CHANGELOG.md": None,
}

# Hand-written chapters: linked from the README's contents (first), never written by this script.
HAND_WRITTEN = ["docs/glossary.md", "docs/troubleshooting.md"]

# Headings inserted into a generated file, so what they introduce is one click from its contents:
# (file, regex of a line outside code, heading text). The heading goes before the paragraph holding
# that line; for a table row, before the table, and before the sentence introducing it when that
# sentence ends with ":". A line not found is reported, never an error.
INSERTED_HEADINGS = [
    ("docs/configuration.md", r"^\| Key \| Default \|", "Every key"),
    ("docs/architecture.md", r"^Each request's path through the modules:", "A request's path through the modules"),
    ("docs/architecture.md", r"^\| Module \| Owns \|", "Modules"),
    ("docs/architecture.md", r"^Where the next things plug in:", "Where the next things plug in"),
]

# The README's paragraph about itself (replaced: the manual is no longer one file).
PREAMBLE_OLD = "This README is the contract and the whole user's manual"
PREAMBLE_NEW = """\
This README is the way in: what the gateway does, how to try it, how a request flows, every error
it answers, and where everything else is. The rest of the manual is in `docs/`, one chapter per
file, each reachable from the [contents](#contents); new words are in the
[glossary](docs/glossary.md), symptoms and their fixes in [troubleshooting](docs/troubleshooting.md).
Every configuration key, header, metric and error code a user relies on is documented in this
README, `docs/` or `CHANGELOG.md`, and `test/repository/readme-documents-everything.test.ts` fails
when the configuration schema, the error catalogue or the metrics name something the manual does
not."""

# Kept sections too long for the README: the whole section moves to its docs file (MAPPING), and
# the README keeps this stand-in under the same heading. Links to `#anchor` are resolved like any
# other (to wherever that heading now is).
STUBS: dict[str, str] = {
    "Configuration": """\
One YAML file, validated at start and by `npx gateway check --config FILE`, which reports every
problem at once with its key path, the value received and its line and column (a misspelt key
names the closest known one); `gateway check --connect` also tries Redis, the identity provider,
the upstreams and the TLS files the file names. `${ENV_VAR}` and `${ENV_VAR:-default}` are
interpolated in every string: use them for secrets.

- [`config/demo.yaml`](config/demo.yaml) is the smallest working file (the demo's): a listener,
  an upstream, a route, a static tokens file and three classes.
- [`config/gateway.example.yaml`](config/gateway.example.yaml) is a commented example of every
  block.
- [Every key, with its default and meaning](docs/configuration.md#every-key), checked against the
  schema (`gateway/config/schema.ts`) by a test.
- [Reloading the configuration](#reloading-the-configuration): `SIGHUP`, or
  `reload: { watch: true }`, applies a changed file without cutting a call; a rejected file is
  logged and the running configuration stays.
- Per topic: [classes, windows and plans](#rate-limiting), [quotas](#quotas),
  [Redis](#running-several-replicas-redis-sentinel-cluster), [`workers`](#using-every-core),
  [upstream pools](#load-balancing-and-health), [retries and timeouts](#retries-timeouts-and-circuit-breaking),
  [load shedding](#load-shedding), [`auth`](#connect-your-authorization-server),
  [`listen.tls`](#tls-and-http2), [`cors`](#cors-for-browser-clients),
  [`decision`](#behind-your-existing-proxy), [`tracing`](#tracing).""",
    "Deploying": """\
The gateway is stateless: run as many replicas as you like behind a load balancer, all pointing at
the same Redis so that they enforce one limit. The whole chapter is
[Deploying](docs/deploying.md); in short:

- **Container**: `docker build -t api-gateway .` builds the image from `Dockerfile` (Node.js 22,
  production dependencies only, runs as uid 1000, `HEALTHCHECK` on `/healthz`); mount your
  configuration at `/etc/gateway/gateway.yaml` and give secrets through the environment.
- **Kubernetes**: [`config/kubernetes/`](config/kubernetes/README.md) has a Deployment, Service,
  PodDisruptionBudget, HorizontalPodAutoscaler, ConfigMap and NetworkPolicy, validated by the tests.
- **The process**: run `node dist/gateway/main.js start --config FILE` (or the `gateway` bin) as
  PID 1 or under your service manager, never `npm start`, which does not pass `SIGTERM` on.
  `SIGTERM` drains within `listen.grace_ms` and exits 0; `SIGHUP` reloads.
- **Behind a load balancer**: set `trust_proxy` to the number of proxies in front
  ([Forwarded headers and `trust_proxy`](#forwarded-headers-and-trust_proxy)).
- **Several cores**: `workers: auto`, with the Redis store ([Using every core](#using-every-core));
  sizing replicas × workers against Redis is in the same chapter.""",
}

# Words that point across sections ("below", "above") made true for the split files: (file, old
# text, new text), applied before anything else. A text not found is reported, never an error.
REWORDS: list[tuple[str, str, str]] = [
    (README, "every family below;", "every family in [Metrics](#metrics);"),
    (
        README,
        "it shows in the\nmetrics and alerts below.",
        "it shows in the\n[metrics](#metrics) and [alerts](#alerts-and-dashboard).",
    ),
    (
        README,
        "(standalone, Sentinel or Cluster; see above)",
        "(standalone, Sentinel or Cluster; see [Running several replicas](#running-several-replicas-redis-sentinel-cluster))",
    ),
    (README, "the README's tables are checked against it", "the manual's tables are checked against it"),
    (README, "It also checks that this README quotes the file verbatim:", "It also checks that this chapter quotes the file verbatim:"),
    (
        "test/bench/README.md",
        "The repository's [README](../../README.md#performance) keeps",
        "The manual's [Performance chapter](../../README.md#performance) keeps",
    ),
]

# The changelog's line for the split itself, added under the first unreleased version.
CHANGELOG_UNRELEASED = re.compile(r"^- \d+\.\d+\.\d+ \(unreleased\):$")
CHANGELOG_ENTRY = """\
  - **Changed** the manual is split into chapters (issue 40): README.md keeps what the gateway does,
    the quick start, how a request flows, the error catalogue and short configuration, operating and
    deploying sections, and links to `docs/`: one chapter per file, each with a contents table, a
    glossary (`docs/glossary.md`) and a troubleshooting guide (`docs/troubleshooting.md`); the
    changelog is `CHANGELOG.md`."""

HEADING = re.compile(r"^(#{1,6}) (.*?)\s*$")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
LINK = re.compile(r"\]\(([^)\s]*)\)")
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


class SplitError(Exception):
    """A problem the integrator must fix before the split can run."""


def slug(title: str) -> str:
    """GitHub's anchor of a heading, before de-duplication (as the README's links have it)."""
    s = title.strip().lower()
    s = "".join(c for c in s if c.isalnum() or c in " -_")
    return s.replace(" ", "-")


def code_mask(lines: list[str]) -> list[bool]:
    """True for each line inside (or opening or closing) a fenced code block."""
    mask, fence = [], None
    for line in lines:
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                mask.append(True)
            else:
                mask.append(False)
        else:
            mask.append(True)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)) :]:
                fence = None
    return mask


@dataclass
class Section:
    """One `## ` or `### ` heading with its lines up to the next such heading."""

    ident: int
    level: int
    title: str
    parent: "Section | None"
    body: list[str] = field(default_factory=list)  # lines after the heading line
    anchor: str = ""  # the README's anchor (de-duplicated over the whole README)
    target: str = ""
    promoted: bool = False
    deep: dict[int, str] = field(default_factory=dict)  # body index -> key of a `####`+ heading


def parse(text: str) -> tuple[list[str], dict[int, str], list[Section], dict[str, str]]:
    """The preamble's lines and its headings' keys, the sections in order, and every README anchor
    to its heading's key."""
    lines = text.split("\n")
    mask = code_mask(lines)
    preamble: list[str] = []
    preamble_keys: dict[int, str] = {}
    sections: list[Section] = []
    anchors: dict[str, str] = {}
    seen: dict[str, int] = {}
    current: Section | None = None
    h2: Section | None = None
    for line, in_code in zip(lines, mask):
        m = None if in_code else HEADING.match(line)
        if m:
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            anchor = base if n == 0 else f"{base}-{n}"
            level = len(m.group(1))
            if level in (2, 3):
                parent = h2 if level == 3 else None
                if level == 3 and h2 is None:
                    raise SplitError(f"`### {m.group(2)}` comes before any `## ` heading")
                current = Section(len(sections), level, m.group(2), parent, anchor=anchor)
                sections.append(current)
                if level == 2:
                    h2 = current
                anchors[anchor] = f"s{current.ident}"
                continue
            # `# ` and `#### `+: an anchor held by the line itself (resolved once it is placed).
            anchors[anchor] = f"l:{anchor}"
            if current:
                current.deep[len(current.body)] = f"l:{anchor}"
            else:
                preamble_keys[len(preamble)] = f"l:{anchor}"
        (current.body if current else preamble).append(line)
    return preamble, preamble_keys, sections, anchors


def matches(pattern: str, title: str) -> bool:
    if pattern.startswith("re:"):
        return re.search(pattern[3:], title, re.I) is not None
    return pattern == title


def assign(sections: list[Section]) -> list[str]:
    """Sets each section's target; returns the `## ` headings no mapping line names."""
    unmapped = []
    for s in sections:
        target = None
        for parent, pattern, file in MAPPING:
            if parent is None and s.level != 2:
                continue
            if parent not in (None, "*") and (s.level != 3 or s.parent is None or s.parent.title != parent):
                continue
            if matches(pattern, s.title):
                target = file
                break
        if target is None:
            if s.level == 2:
                unmapped.append(s.title)
                continue
            target = s.parent.target  # an unmapped `###` follows its `##`
        if target != README and target != DROP and target not in FILES:
            raise SplitError(f"MAPPING sends {s.title!r} to {target!r}, which FILES does not declare")
        s.target = target
    return unmapped


def shift_headings(lines: list[str], by: int) -> list[str]:
    """The lines with every heading outside code moved `by` levels (negative: promoted)."""
    if by == 0:
        return list(lines)
    out = []
    for line, in_code in zip(lines, code_mask(lines)):
        m = None if in_code else HEADING.match(line)
        if m:
            level = max(1, min(6, len(m.group(1)) + by))
            line = "#" * level + " " + m.group(2)
        out.append(line)
    return out


def squeeze(text: str) -> str:
    """The text with runs of blank lines outside code blocks made one, ending in one newline."""
    lines = text.split("\n")
    out: list[str] = []
    for line, in_code in zip(lines, code_mask(lines)):
        if not in_code and not line.strip() and out and not out[-1].strip():
            continue
        out.append(line)
    return "\n".join(trim(out)) + "\n"


def reword(path: str, text: str, report: list[str]) -> str:
    """REWORDS for one file."""
    for file, old, new in REWORDS:
        if file != path:
            continue
        if text.count(old) != 1 and text.count(new) == 1:
            continue  # applied by an earlier run
        if text.count(old) != 1:
            report.append(f"warning: {path}: {old!r} found {text.count(old)} times; not reworded")
            continue
        text = text.replace(old, new)
    return text


def trim(lines: list[str]) -> list[str]:
    """The lines without leading and trailing blank lines."""
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


@dataclass
class Out:
    """A file being written: its lines, and for heading lines the key of the heading they carry."""

    path: str
    lines: list[str] = field(default_factory=list)
    keys: dict[int, str] = field(default_factory=dict)

    def heading(self, level: int, title: str, key: str | None) -> None:
        if self.lines and self.lines[-1].strip():
            self.lines.append("")
        if key:
            self.keys[len(self.lines)] = key
        self.lines.append("#" * level + " " + title)
        self.lines.append("")

    def text(self, lines: list[str], keys: dict[int, str] | None = None) -> None:
        """Appends the lines (blank lines around them trimmed); `keys` by index into `lines`."""
        lead = next((i for i, l in enumerate(lines) if l.strip()), len(lines))
        kept = trim(lines)
        if not kept:
            return
        if self.lines and self.lines[-1].strip():
            self.lines.append("")
        start = len(self.lines)
        self.lines.extend(kept)
        for i, key in (keys or {}).items():
            if lead <= i < lead + len(kept):
                self.keys[start + i - lead] = key


def place_section(out: Out, s: Section, level: int) -> None:
    """Writes section `s` at heading `level` (its deeper headings moved with it)."""
    out.heading(level, s.title, f"s{s.ident}")
    out.text(shift_headings(s.body, level - s.level), s.deep)


def anchors_of(out: Out) -> tuple[dict[str, str], dict[int, str]]:
    """Heading key -> anchor in this file, and line index -> anchor, with GitHub's de-duplication."""
    seen: dict[str, int] = {}
    by_key: dict[str, str] = {}
    by_line: dict[int, str] = {}
    for i, (line, in_code) in enumerate(zip(out.lines, code_mask(out.lines))):
        m = None if in_code else HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        anchor = base if n == 0 else f"{base}-{n}"
        by_line[i] = anchor
        key = out.keys.get(i)
        if key and key not in by_key:
            by_key[key] = anchor
    return by_key, by_line


def rel(from_file: str, to_file: str) -> str:
    """The link path from one repository file to another."""
    return posixpath.relpath(to_file, posixpath.dirname(from_file) or ".")


def rewrite_links(out: Out, locate, errors: list[str], moved_from_root: bool) -> None:
    """Points every `](#a)` at the file holding heading a; re-bases file links of a moved file."""
    mask = code_mask(out.lines)

    def fix(m: re.Match) -> str:
        target = m.group(1)
        if target.startswith("#"):
            where = locate(target[1:])
            if where is None:
                errors.append(f"{out.path}: link to #{target[1:]}, which no heading of README.md has")
                return m.group(0)
            file, anchor = where
            path = "" if file == out.path else rel(out.path, file)
            return "](" + path + ("#" + anchor if anchor else "") + ")" if path or anchor else m.group(0)
        if SCHEME.match(target) or target.startswith("/") or not moved_from_root:
            return m.group(0)
        file_part, _, frag = target.partition("#")
        if posixpath.normpath(file_part) == README and frag:
            where = locate(frag)
            if where is not None:
                return "](" + rel(out.path, where[0]) + ("#" + where[1] if where[1] else "") + ")"
        return "](" + rel(out.path, file_part) + (("#" + frag) if frag else "") + ")"

    out.lines = [line if in_code else LINK.sub(fix, line) for line, in_code in zip(out.lines, mask)]


def contents_lines(out: Out) -> list[str]:
    """The `## `/`### ` headings of a file as a nested list of links."""
    items = []
    _, by_line = anchors_of(out)
    for i, line in enumerate(out.lines):
        if i not in by_line:
            continue
        m = HEADING.match(line)
        level = len(m.group(1))
        if level == 1 or level > 3 or m.group(2) == "Contents":
            continue
        items.append("  " * (level - 2) + f"- [{m.group(2)}](#{by_line[i]})")
    return items


def top_headings(path: str, lines: list[str]) -> tuple[str, list[tuple[str, str]]]:
    """A file's `# ` title and its `## ` headings with their anchors (for the README's contents)."""
    title, subs, seen = path, [], {}
    for line, in_code in zip(lines, code_mask(lines)):
        m = None if in_code else HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        if len(m.group(1)) == 1 and title == path:
            title = m.group(2)
        elif len(m.group(1)) == 2 and m.group(2) != "Contents":
            subs.append((m.group(2), base if n == 0 else f"{base}-{n}"))
    return title, subs


def insert_headings(out: Out, report: list[str]) -> None:
    """INSERTED_HEADINGS for one file: a `## ` heading before a paragraph or a table."""
    for file, pattern, title in INSERTED_HEADINGS:
        if file != out.path:
            continue
        mask = code_mask(out.lines)
        line = next((i for i, l in enumerate(out.lines) if not mask[i] and re.match(pattern, l)), None)
        if line is None:
            report.append(f"warning: {file}: no line matches {pattern!r}; no heading {title!r}")
            continue
        at = line
        is_table = out.lines[line].startswith("|")
        while at > 0 and out.lines[at - 1].strip() and not mask[at - 1] and not HEADING.match(out.lines[at - 1]):
            if is_table and not out.lines[at - 1].startswith("|"):
                break
            at -= 1
        if is_table and at >= 2 and not out.lines[at - 1].strip() and not mask[at - 2]:
            intro = at - 1
            while intro > 0 and out.lines[intro - 1].strip() and not mask[intro - 1] and not HEADING.match(out.lines[intro - 1]):
                intro -= 1
            if intro < at - 1 and out.lines[at - 2].rstrip().endswith(":"):
                at = intro
        out.lines[at:at] = ["## " + title, ""]
        out.keys = {(k + 2 if k >= at else k): v for k, v in out.keys.items()}
        out.keys[at] = f"i:{title}"


def split(text: str, other_markdown: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """The files to write (path -> content) and a report, from the README's text."""
    report: list[str] = []
    if MARKER in text:
        raise SplitError(
            "README.md is already split (it carries the split marker). Restore the one-file README "
            "first, e.g. `git checkout <merged main> -- README.md`, then run this again."
        )
    text = reword(README, text, report)
    preamble, preamble_keys, sections, readme_anchors = parse(text)
    unmapped = assign(sections)
    if unmapped:
        raise SplitError(
            "no MAPPING line for these `## ` headings (add one line each to scripts/split-manual.py):\n"
            + "\n".join(f"  (None, {t!r}, 'docs/<chapter>.md')," for t in unmapped)
        )
    if not any(s.target not in (README, DROP) for s in sections):
        raise SplitError("README.md has no section that goes to docs/: is it already split?")

    outs: dict[str, Out] = {p: Out(p) for p in [README, *FILES]}
    promoted_keys: set[str] = set()

    # Generated files: title, then sections in README order.
    for path, declared in FILES.items():
        mine = [s for s in sections if s.target == path]
        if not mine:
            continue
        out = outs[path]
        first = mine[0]
        promote = declared is None
        title = first.title if promote else declared
        out.heading(1, title, f"s{first.ident}" if promote else f"t:{path}")
        if promote:
            first.promoted = True
            promoted_keys.add(f"s{first.ident}")
        out.lines.append("{{CONTENTS}}")
        for s in mine:
            if s is first and promote:
                out.text(shift_headings(s.body, -1), s.deep)
                continue
            parent_here = s.level == 3 and s.parent is not None and s.parent.target == path
            if parent_here and not s.parent.promoted:
                level = 3
            else:
                level = 2
            place_section(out, s, level)
        insert_headings(out, report)
        report.append(f"{path}: " + ", ".join(("#" * s.level) + " " + s.title for s in mine))

    # The README: preamble, contents, kept sections and stand-ins, in README order.
    readme = outs[README]
    pre = list(preamble)
    idx = next((i for i, l in enumerate(pre) if l.startswith(PREAMBLE_OLD)), None)
    if idx is None:
        report.append(f"warning: the preamble has no paragraph starting {PREAMBLE_OLD!r}; left as it is")
    else:
        end = idx
        while end < len(pre) and pre[end].strip():
            end += 1
        pre[idx:end] = PREAMBLE_NEW.split("\n")
    readme.lines.extend([MARKER, ""])
    readme.text(pre, preamble_keys)
    readme.heading(2, "Contents", "contents")
    readme.lines.append("{{CONTENTS}}")
    kept = []
    for s in sections:
        if s.target == README:
            place_section(readme, s, s.level)
            kept.append(s.title)
        elif s.level == 2 and s.title in STUBS:
            readme.heading(2, s.title, f"stub:{s.title}")
            readme.text(STUBS[s.title].split("\n"))
            kept.append(s.title + " (stand-in)")
        moved_children = [c for c in sections if c.parent is s and c.target not in (README, s.target)]
        if s.level == 2 and s.target == README and moved_children:
            links = ", ".join(f"[{c.title}](#{c.anchor})" for c in moved_children)
            readme.text(["", f"The rest of this section has chapters of its own: {links}."])
    missing_stubs = [t for t in STUBS if not any(s.title == t and s.level == 2 for s in sections)]
    if missing_stubs:
        report.append(f"warning: no `## ` section for the stand-ins {missing_stubs}")
    report.append("README.md keeps: " + ", ".join(kept))

    # The changelog's line for this split.
    log = outs["CHANGELOG.md"].lines
    at = next((i for i, l in enumerate(log) if CHANGELOG_UNRELEASED.match(l)), None)
    if at is None:
        report.append("warning: CHANGELOG.md has no `- X.Y.Z (unreleased):` line; the split's entry is not added")
    else:
        log[at + 1 : at + 1] = CHANGELOG_ENTRY.split("\n")

    # Where every README anchor is now.
    placed: dict[str, tuple[str, str | None]] = {}
    for out in outs.values():
        by_key, _ = anchors_of(out)
        for key, anchor in by_key.items():
            if key.startswith("stub:") or key.startswith("t:"):
                continue
            if key not in placed:
                placed[key] = (out.path, None if key in promoted_keys else anchor)
    placed["contents"] = (README, "contents")

    def locate(anchor: str) -> tuple[str, str | None] | None:
        if anchor == "contents":
            return placed["contents"]
        key = readme_anchors.get(anchor)
        if key is None:
            return None
        return placed.get(key)

    errors: list[str] = []
    for path, out in outs.items():
        if out.lines:
            rewrite_links(out, locate, errors, moved_from_root=path != README and "/" in path)

    # Contents tables.
    generated = [p for p in FILES if outs[p].lines]
    for path in generated:
        out = outs[path]
        i = out.lines.index("{{CONTENTS}}")
        if path == "CHANGELOG.md":
            out.lines[i : i + 1] = []
            continue
        items = contents_lines(out)
        nav = (
            "- The manual: [README](../README.md#contents) · [Glossary](glossary.md) · "
            "[Troubleshooting](troubleshooting.md)"
        )
        out.lines[i : i + 1] = [
            "Part of the [API gateway manual](../README.md#contents).",
            "",
            "## Contents",
            "",
            *items,
            nav,
            "",
        ]
    chapter_lines = []
    for path in [*HAND_WRITTEN, *generated]:
        if path in HAND_WRITTEN:
            full = os.path.join(ROOT, path)
            if not os.path.exists(full):
                report.append(f"warning: {path} (hand-written) does not exist; not linked")
                continue
            with open(full, encoding="utf-8") as f:
                body = f.read().split("\n")
        else:
            body = outs[path].lines
        title, subs = top_headings(path, body)
        line = f"- [{title}]({path})"
        if subs:
            line += ": " + ", ".join(f"[{t}]({path}#{a})" for t, a in subs)
        chapter_lines.append(line)
    i = readme.lines.index("{{CONTENTS}}")
    readme.lines[i : i + 1] = [
        *contents_lines(readme),
        "",
        "The rest of the manual, one chapter per file:",
        "",
        *chapter_lines,
    ]

    # Other Markdown files of the repository that link into README.md#anchor.
    files = {p: squeeze("\n".join(o.lines)) for p, o in outs.items() if o.lines}
    for path, original in other_markdown.items():
        content = reword(path, original, report)
        changed = content != original

        def fix(m: re.Match) -> str:
            nonlocal changed
            target = m.group(1)
            file_part, _, frag = target.partition("#")
            if not frag or SCHEME.match(target) or not file_part:
                return m.group(0)
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), file_part))
            if resolved != README:
                return m.group(0)
            where = locate(frag)
            if where is None:
                errors.append(f"{path}: link to README.md#{frag}, which no heading of README.md has")
                return m.group(0)
            changed = True
            return "](" + rel(path, where[0]) + ("#" + where[1] if where[1] else "") + ")"

        lines = content.split("\n")
        mask = code_mask(lines)
        new = "\n".join(l if c else LINK.sub(fix, l) for l, c in zip(lines, mask))
        if changed:
            files[path] = new
            report.append(f"{path}: links into README.md re-pointed")

    if errors:
        raise SplitError("links to headings that do not exist:\n" + "\n".join("  " + e for e in errors))
    return files, report


def tracked_markdown() -> dict[str, str]:
    """The repository's other Markdown files (git's list), by path."""
    try:
        names = subprocess.run(
            ["git", "ls-files", "*.md"], cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        names = []
    skip = {README, "CHANGELOG.md", *HAND_WRITTEN}
    out = {}
    for n in sorted(names):
        if n in skip or n.startswith("docs/") or n.startswith("scripts/"):
            continue
        with open(os.path.join(ROOT, n), encoding="utf-8") as f:
            out[n] = f.read()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="print where every heading goes; write nothing")
    ap.add_argument("--out", metavar="DIR", help="write the files under DIR instead of the repository (a preview)")
    args = ap.parse_args()
    dest = os.path.abspath(args.out) if args.out else ROOT
    with open(os.path.join(ROOT, README), encoding="utf-8") as f:
        text = f.read()
    try:
        files, report = split(text, tracked_markdown())
    except SplitError as e:
        print(f"split-manual: {e}", file=sys.stderr)
        return 1
    for line in report:
        print(line)
    if args.dry_run:
        for path, content in sorted(files.items()):
            print(f"would write {path}: {content.count(chr(10))} lines")
        return 0
    stale = [p for p in FILES if p not in files and os.path.exists(os.path.join(dest, p))]
    for p in stale:
        os.remove(os.path.join(dest, p))
        print(f"removed {p} (no section maps to it any more)")
    for path, content in sorted(files.items()):
        full = os.path.join(dest, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(content)
        print(f"wrote {path}: {content.count(chr(10))} lines")
    print("next: npx vitest run test/repository/ (links, anchors, contents, keys, codes, metrics, length)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
