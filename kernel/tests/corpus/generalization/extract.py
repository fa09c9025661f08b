#!/usr/bin/env python3
"""Builds the second detector corpus (the generalization corpus) from unpacked
public packages, none of them garak or AgentDojo.

Usage: extract.py SRC_DIR OUT_DIR

SRC_DIR holds one folder per archive, each the archive unpacked (see
PROVENANCE.md for the commands and the sha256 of every archive):

    spikee/                   spikee-0.9.2-py3-none-any.whl
    pyrit/                    pyrit-1.1.0-py3-none-any.whl
    agent_injection_bench/    agent_injection_bench-0.1.0-py3-none-any.whl
    jailbreak_corpus_mini_py/ jailbreak_corpus_mini_py-0.1.0-py3-none-any.whl
    feedparser/               feedparser-6.0.14.tar.gz
    django/                   django-5.2.19-py3-none-any.whl

Nothing is imported from any package; data files are read directly (YAML with
PyYAML, the only dependency). Every item is normalised (line breaks to LF,
trailing spaces of each line dropped, runs of blank lines cut to one, leading
and trailing blank lines removed), deduplicated within its family and sorted.
Each item then goes to the held-out split when the sha256 of its UTF-8 bytes,
read as a big-endian integer, is odd, and to the tuning split otherwise, so
the split of an item never depends on anything but its text. The output is one
JSON string per line, one file per family, under OUT_DIR/{tuning,heldout}/
{attack,benign}/, and OUT_DIR/heldout.sha256, the sha256 of every held-out
file in `sha256sum` format.
"""

import csv
import hashlib
import json
import pathlib
import re
import sys

import yaml

# What fills the goal slot of a jailbreak template: a fixed request that is
# neither an injection marker nor a harmful ask, so a detection comes from the
# template's own text.
GOAL = "Write a short summary of the history of the printing press."


def normalise(text):
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n")


def family(items):
    out = set()
    for item in items:
        if not isinstance(item, str):
            continue
        item = normalise(item)
        if item.strip():
            out.add(item)
    return sorted(out)


def held_out(text):
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16) % 2 == 1


# ---------------------------------------------------------------- attacks


def spikee(src):
    """spikee 0.9.2: its jailbreak templates, each filled with one of its
    injection instructions (round robin over the sorted pool), and the
    injection instructions on their own, by instruction type. The
    harmful-content and financial-advice instructions are left out: they are
    requests a model should refuse, not injections."""
    root = src / "spikee/spikee/data/workspace/datasets"
    kinds = {
        "sysmsg-extract": "spikee-system-prompt-extraction",
        "data-exfil-markdown": "spikee-markdown-exfiltration",
        "xss": "spikee-script-payload",
        "long-output": "spikee-task-override",
        "encoding": "spikee-task-override",
        "translation": "spikee-task-override",
    }
    by_family = {}
    pool = set()
    for path in sorted(root.glob("*/instructions.jsonl")):
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            name = kinds.get(record.get("instruction_type"))
            if name is None:
                continue
            by_family.setdefault(name, []).append(record["instruction"])
            pool.add(record["instruction"])
    pool = sorted(pool)
    templates = set()
    for path in sorted(root.glob("*/jailbreaks.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                templates.add(json.loads(line)["text"])
    filled = [t.replace("<INSTRUCTION>", pool[i % len(pool)]) for i, t in enumerate(sorted(templates))]
    by_family["spikee-jailbreak-templates"] = filled
    return by_family


def pyrit_template_text(path):
    data = yaml.safe_load(path.read_text())
    value = data.get("value") if isinstance(data, dict) else None
    if not isinstance(value, str):
        return None
    fills = {"prompt": GOAL, "prompt_in_greek": GOAL, "demographic": "left-handed people",
             "target_group": "left-handed people"}
    return re.sub(r"\{\{\s*([a-z_]+)\s*\}\}", lambda m: fills.get(m.group(1), m.group(0)), value)


def pyrit(src):
    """PyRIT 1.1.0: the jailbreak templates of `datasets/jailbreak/templates`
    (the top folder, `Arth_Singh/` and `multi_parameter/`; `in_the_wild/`,
    488 scraped prompts, and `pliny/`, model-specific leetspeak, are left
    out), filled with GOAL; and the system-prompt theft seeds of
    `psfuzz_steal_system.prompt`, one per numbered item."""
    base = src / "pyrit/pyrit/datasets/jailbreak/templates"
    paths = sorted(base.glob("*.yaml")) + sorted((base / "Arth_Singh").glob("*.yaml")) \
        + sorted((base / "multi_parameter").glob("*.yaml"))
    templates = [t for t in (pyrit_template_text(p) for p in paths) if t]
    seeds = yaml.safe_load((src / "pyrit/pyrit/datasets/seed_datasets/local/psfuzz_steal_system.prompt").read_text())
    steal = []
    for seed in seeds["seeds"]:
        for item in re.split(r"\s*\|\s*(?=\d+\.\s)", seed["value"]):
            steal.append(re.sub(r"^\d+\.\s*", "", item.strip()).rstrip("|").strip())
    return {"pyrit-jailbreak-templates": templates, "pyrit-system-prompt-theft": steal}


def agent_injection_bench(src):
    """agent-injection-bench 0.1.0: the injected text of every attack."""
    items = []
    for line in (src / "agent_injection_bench/aib/data/attacks.jsonl").read_text().splitlines():
        if line.strip():
            items.append(json.loads(line)["injected"])
    return {"aib-injected": items}


def jailbreak_corpus_mini(src):
    """jailbreak-corpus-mini-py 0.1.0: every prompt."""
    data = json.loads((src / "jailbreak_corpus_mini_py/jailbreak_corpus_mini/corpus.json").read_text())
    return {"jailbreak-corpus-mini": [d["prompt"] for d in data]}


# ---------------------------------------------------------------- benign


def spikee_benign(src):
    """spikee's host documents (the injection slot left empty), its
    false-positive user inputs, and the HTML pages of its result viewer."""
    root = src / "spikee/spikee/data/workspace/datasets"
    docs, inputs = [], []
    for path in sorted(root.glob("*/base_user_inputs.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                slot = record.get("placeholder") or ""
                doc = record.get("document", "")
                docs.append(doc.replace(slot, "") if slot else doc)
    for path in sorted(root.glob("*-fp/standalone_user_inputs.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                inputs.append(json.loads(line)["text"])
    pages = [p.read_text() for p in sorted((src / "spikee/spikee/viewer/templates").rglob("*.html"))]
    return {"spikee-documents": docs, "spikee-user-inputs": inputs, "spikee-html-pages": pages}


def pyrit_benign(src):
    """PyRIT's refusal-scorer answers: model responses, refusals included."""
    path = src / "pyrit/pyrit/datasets/scorer_evals/refusal_scorer/refusal.csv"
    lines = [line for line in path.read_text().splitlines(keepends=True) if not line.startswith("#")]
    rows = csv.DictReader(lines)
    return {"pyrit-responses": [row["assistant_response"] for row in rows]}


def aib_benign(src):
    """agent-injection-bench's user tasks and tool descriptions."""
    items = []
    for line in (src / "agent_injection_bench/aib/data/attacks.jsonl").read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            items.append(record["task"])
            for tool in record.get("tools", []):
                items.append(tool.get("description", ""))
    return {"aib-tasks": items}


def feedparser_benign(src):
    """feedparser's test feeds (RSS 2.0, Atom 1.0, and the sanitizer's HTML
    cases, scripts included) with the leading test-description comment
    removed: plain XML records and HTML with no instruction to a model."""
    root = next((src / "feedparser").glob("feedparser-*/tests/wellformed"))
    out = {}
    for folder, name in (("rss", "feedparser-rss"), ("atom10", "feedparser-atom"), ("sanitize", "feedparser-html")):
        items = []
        for path in sorted((root / folder).glob("*.xml")):
            text = path.read_text(errors="replace")
            items.append(re.sub(r"\A\s*<!--.*?-->\s*", "", text, flags=re.S))
        out[name] = items
    return out


# Languages of the Django catalogs read.
LANGUAGES = ["ar", "de", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt_BR", "ru", "zh_Hans"]


def po_strings(text):
    """The msgstr values of a .po file (continuation lines joined)."""
    out, current, active = [], [], False
    for line in text.splitlines():
        if line.startswith("msgstr "):
            active, current = True, [line[len("msgstr "):]]
        elif active and line.startswith('"'):
            current.append(line)
        else:
            if active:
                out.append("".join(json.loads(part) for part in current))
            active = False
    if active:
        out.append("".join(json.loads(part) for part in current))
    return out


def django_benign(src):
    """Django's translations: every message of six words or more of the core
    and admin catalogs, in twelve languages."""
    items = []
    for lang in LANGUAGES:
        for catalog in ("django/conf/locale", "django/contrib/admin/locale"):
            path = src / "django" / catalog / lang / "LC_MESSAGES/django.po"
            for text in po_strings(path.read_text()):
                if len(text.split()) >= 6 or (lang in ("ja", "zh_Hans", "ko") and len(text) >= 15):
                    items.append(text)
    return {"django-translations": items}


def write(out, split, kind, name, items):
    path = out / split / kind / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for item in items:
            f.write(json.dumps(item, ensure_ascii=False) + "\n")


def main():
    src, out = (pathlib.Path(a) for a in sys.argv[1:3])
    attacks, benign = {}, {}
    for part in (spikee, pyrit, agent_injection_bench, jailbreak_corpus_mini):
        attacks.update(part(src))
    for part in (spikee_benign, pyrit_benign, aib_benign, feedparser_benign, django_benign):
        benign.update(part(src))
    for kind, families in (("attack", attacks), ("benign", benign)):
        for name, items in sorted(families.items()):
            items = family(items)
            write(out, "heldout", kind, name, [i for i in items if held_out(i)])
            write(out, "tuning", kind, name, [i for i in items if not held_out(i)])
    digests = []
    for path in sorted((out / "heldout").rglob("*.jsonl")):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        digests.append(f"{digest}  {path.relative_to(out).as_posix()}\n")
    (out / "heldout.sha256").write_text("".join(digests))


if __name__ == "__main__":
    main()
