#!/usr/bin/env python3
"""Builds the fourth held-out split of the generalization corpus from unpacked
public packages that no earlier split came from.

Usage: extract_fourth.py SRC_DIR CORPUS_DIR OUT_DIR

SRC_DIR holds one folder per archive, each the archive unpacked (see
PROVENANCE.md for the commands and the sha256 of every archive):

    bastioncorpus/          bastioncorpus-0.6.0-py3-none-any.whl
    bastionprobe/           bastionprobe-0.19.0-py3-none-any.whl
    aegisrt/                aegisrt-0.1.0-py3-none-any.whl
    nullsec_promptinject/   nullsec_promptinject-0.1.0-py3-none-any.whl
    aicu_scanner/           aicu_scanner-1.5.0-py3-none-any.whl
    sphinx/                 sphinx-8.2.3-py3-none-any.whl
    markdown/               markdown-3.8.tar.gz

CORPUS_DIR is this corpus's folder (`tests/corpus/generalization`) and its
sibling `tests/corpus/detector`: an item already present in either, in any
split, is left out. Nothing is imported from any package (Python files are
read with `ast`, YAML with PyYAML). Items are normalised as in `extract.py`,
deduplicated within each family and sorted. The whole output is held out:
OUT_DIR/fourth/{attack,benign}/FAMILY.jsonl, one JSON string per line, and
OUT_DIR/fourth.sha256 in `sha256sum` format.
"""

import ast
import base64
import hashlib
import json
import pathlib
import re
import sys

import yaml

# What fills a task slot of a template (the request `extract.py` uses), so a
# detection comes from the template's own text.
GOAL = "Write a short summary of the history of the printing press."

# What fills a canary slot: a token the attacker wants echoed.
CANARY = "ZQ7-CANARY-1138"

SLOTS = [
    "[INSERT QUERY]",
    "[INSERT HARMFUL ACTION]",
    "[INSERT HARMFUL INSTRUCTION]",
    "[TASK]",
    "[HARMFUL REQUEST]",
    "[HARMFUL_TOPIC]",
    "[RESTRICTED_TOPIC]",
]


def normalise(text):
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = [line.rstrip() for line in text.split("\n")]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n")


def fill(text):
    text = text.replace("{canary}", CANARY)
    for slot in SLOTS:
        text = text.replace(slot, GOAL)
    return text


def family(items):
    out = set()
    for item in items:
        if isinstance(item, str) and item.strip():
            out.add(normalise(fill(item)))
    return sorted(out)


def jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def list_constant(path, name):
    """The list of strings bound to `name` at module level of a Python file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        target = getattr(node, "target", None) or (node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id == name:
            return [ast.literal_eval(e) for e in node.value.elts]
    raise SystemExit(f"{path}: no {name}")


def payload_text(node):
    """The first argument of a `Payload(...)` call: a string constant, or the
    one `"..." + base64.b64encode(b"...").decode()` expression."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        encoded = [n.value for n in ast.walk(node.right) if isinstance(n, ast.Constant) and isinstance(n.value, bytes)]
        if isinstance(node.left, ast.Constant) and len(encoded) == 1:
            return node.left.value + base64.b64encode(encoded[0]).decode()
    raise SystemExit(f"unreadable payload at line {node.lineno}")


# ---------------------------------------------------------------- attacks


def bastion(src):
    """bastioncorpus 0.6.0: every item labelled malicious; bastionprobe 0.19.0:
    every payload (canary slots filled)."""
    rows = jsonl(src / "bastioncorpus/bastioncorpus/corpus/injections.jsonl")
    probes = jsonl(src / "bastionprobe/bastionprobe/payloads.jsonl")
    return {
        "bastioncorpus-injections": family(r["text"] for r in rows if r["label"] == "malicious"),
        "bastionprobe-payloads": family(r["text"] for r in probes),
    }


def aegisrt(src):
    """aegisrt 0.1.0: the seeds of its injection probe, and its jailbreak
    templates, DAN variants and multilingual seeds (task slots filled)."""
    root = src / "aegisrt/aegisrt"
    data = root / "datasets"
    return {
        "aegisrt-injection-seeds": family(list_constant(root / "probes/injection.py", "INJECTION_SEEDS")),
        "aegisrt-jailbreak-templates": family(r["prompt"] for r in jsonl(data / "jailbreak_templates.jsonl")),
        "aegisrt-dan-variants": family(r["prompt"] for r in jsonl(data / "dan_variants.jsonl")),
        "aegisrt-multilingual-seeds": family(r["prompt"] for r in jsonl(data / "multilingual_seeds.jsonl")),
    }


def nullsec(src):
    """nullsec-promptinject 0.1.0: every payload of its library, all languages."""
    path = src / "nullsec_promptinject/nullsec_promptinject/payloads.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    texts = [
        payload_text(node.args[0])
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Payload"
    ]
    return {"nullsec-payloads": family(texts)}


def aicu(src):
    """aicu-scanner 1.5.0: every line of its prompt-injection, extraction,
    jailbreak and context-manipulation payload lists."""
    root = src / "aicu_scanner/aicu/payloads"
    names = [
        "intruder_01_prompt_injection.txt",
        "intruder_02_sophisticated_extraction.txt",
        "intruder_04_jailbreaks.txt",
        "intruder_05_context_manipulation.txt",
    ]
    lines = [line for name in names for line in (root / name).read_text(encoding="utf-8").splitlines()]
    return {"aicu-extraction-payloads": family(lines)}


# ---------------------------------------------------------------- benign


def bastion_benign(src):
    """bastioncorpus: every item labelled benign (requests that use the words
    of attacks: ignore case, act as, reveal, system...)."""
    rows = jsonl(src / "bastioncorpus/bastioncorpus/corpus/injections.jsonl")
    return {"bastioncorpus-benign": family(r["text"] for r in rows if r["label"] == "benign")}


LANGUAGES = ["ar", "de", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt_BR", "ru", "zh_CN"]


def po_messages(path):
    """The translated messages of a `.po` file (singular `msgstr` only)."""
    text = path.read_text(encoding="utf-8")
    out = []
    for block in re.findall(r'^msgstr ((?:".*"\n?)+)', text, re.M):
        out.append("".join(ast.literal_eval(part) for part in re.findall(r'"(?:[^"\\]|\\.)*"', block)))
    return out


def long_enough(text, language):
    if language in ("ja", "ko", "zh_CN"):
        return len(text) >= 25
    return len(text.split()) >= 10


def sphinx_benign(src):
    """Sphinx 8.2.3: every translated message of ten words or more (twenty-five
    characters in Japanese, Korean and Chinese) in twelve languages, and every
    HTML template of its themes (markup that addresses no model)."""
    root = src / "sphinx/sphinx"
    messages = []
    for language in LANGUAGES:
        path = root / "locale" / language / "LC_MESSAGES/sphinx.po"
        messages.extend(m for m in po_messages(path) if long_enough(m, language))
    pages = [p.read_text(encoding="utf-8") for p in sorted((root / "themes").rglob("*.html"))]
    return {"sphinx-translations": family(messages), "sphinx-html-templates": family(pages)}


def markdown_benign(src):
    """Python-Markdown 3.8 (sdist): every test document, Markdown source and
    its expected HTML, under `tests/`."""
    root = next((src / "markdown").glob("markdown-*")) / "tests"
    files = sorted(p for p in root.rglob("*") if p.suffix in (".txt", ".html"))
    return {"markdown-test-documents": family(p.read_text(encoding="utf-8") for p in files)}


# ---------------------------------------------------------------- output


def seen(corpus):
    """Every item of the existing corpora (first corpus and every split)."""
    out = set()
    for root in (corpus, corpus.parent / "detector"):
        for path in root.rglob("*.jsonl"):
            if "fourth" in path.relative_to(root).parts:
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                value = json.loads(line)
                if isinstance(value, str):
                    out.add(normalise(value))
    return out


def write(out, kind, families, known):
    folder = out / "fourth" / kind
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, items in sorted(families.items()):
        items = [i for i in items if i not in known]
        path = folder / f"{name}.jsonl"
        path.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
        written.append(path)
        print(f"{kind} {name}: {len(items)}")
    return written


def main():
    src, corpus, out = (pathlib.Path(a) for a in sys.argv[1:4])
    known = seen(corpus)
    attacks = {**bastion(src), **aegisrt(src), **nullsec(src), **aicu(src)}
    benign = {**bastion_benign(src), **sphinx_benign(src), **markdown_benign(src)}
    files = write(out, "attack", attacks, known) + write(out, "benign", benign, known)
    lines = []
    for path in sorted(files):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"{digest}  {path.relative_to(out).as_posix()}\n")
    (out / "fourth.sha256").write_text("".join(lines), encoding="utf-8")


if __name__ == "__main__":
    main()
