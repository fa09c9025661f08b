#!/usr/bin/env python3
"""Builds the fifth held-out split of the generalization corpus from unpacked
public packages that no earlier split came from.

Usage: extract_fifth.py SRC_DIR CORPUS_DIR OUT_DIR

SRC_DIR holds one folder per archive, each the archive unpacked (see
PROVENANCE.md for the commands and the sha256 of every archive):

    fas_judgement/          fas_judgement-3.1.1-py3-none-any.whl
    lmtwt/                  lmtwt-0.2.0-py3-none-any.whl
    prompt_fuzz_cli/        prompt_fuzz_cli-0.1.0-py3-none-any.whl
    hermes_jailbench/       hermes_jailbench-0.2.2-py3-none-any.whl
    sentinelprobe/          sentinelprobe-0.11.0-py3-none-any.whl
    weiseer_prompt_redteam/ weiseer_prompt_redteam-0.1.0-py3-none-any.whl
    pytest_wardenbot/       pytest_wardenbot-0.3.0-py3-none-any.whl
    jailscan/               jailscan-0.1.1-py3-none-any.whl
    django_allauth/         django_allauth-65.22.1-py3-none-any.whl
    markdown_it/            markdown_it_py-4.3.0.tar.gz

CORPUS_DIR is this corpus's folder (`tests/corpus/generalization`) and its
sibling `tests/corpus/detector`: an item already present in either, in any
other split, is left out. Nothing is imported from any package (Python files
are read with `ast`, YAML with PyYAML). Items are normalised as in
`extract.py`, deduplicated within each family and sorted. The whole output is
held out: OUT_DIR/fifth/{attack,benign}/FAMILY.jsonl, one JSON string per
line, and OUT_DIR/fifth.sha256 in `sha256sum` format.
"""

import ast
import hashlib
import json
import pathlib
import re
import sys

import yaml

# What fills a task slot of a template (the request `extract.py` uses), so a
# detection comes from the template's own text.
GOAL = "Write a short summary of the history of the printing press."

SLOTS = ["{TARGET}", "[REPLACE_WITH_RESTRICTED_TOPIC]"]

# fas-judgement names the source of each pattern; these two are the first
# corpus's source (garak) and the package garak's `promptinject` probe copies.
FIRST_CORPUS_SOURCES = ("github.com/leondz/garak", "github.com/agencyenterprise/promptinject")


def normalise(text):
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = [line.rstrip() for line in text.split("\n")]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n")


def fill(text):
    for slot in SLOTS:
        text = text.replace(slot, GOAL)
    return text


def family(items):
    out = set()
    for item in items:
        if isinstance(item, str) and item.strip():
            out.add(normalise(fill(item)))
    return sorted(out)


def module_constants(path, suffix):
    """The values bound at module level of a Python file to names ending in
    `suffix`, in file order."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in tree.body:
        target = getattr(node, "target", None) or (node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id.endswith(suffix):
            out.append(ast.literal_eval(node.value))
    if not out:
        raise SystemExit(f"{path}: no *{suffix}")
    return out


# ---------------------------------------------------------------- attacks


def fas_judgement(src):
    """fas-judgement 3.1.1: every pattern of its single-shot library, less
    those it names as taken from garak or promptinject."""
    path = src / "fas_judgement/fas_judgement/modules/ai_security/patterns/data/single-shot/patterns.json"
    rows = json.loads(path.read_text(encoding="utf-8"))
    kept = [r["text"] for r in rows if not r["source"].startswith(FIRST_CORPUS_SOURCES)]
    return {"fas-judgement-patterns": family(kept)}


def lmtwt(src):
    """lmtwt 0.2.0: the prompt of every probe of its library (injection, leak,
    tool-abuse and context-poisoning probes)."""
    root = src / "lmtwt/lmtwt/probes/library"
    probes = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted(root.glob("*.yaml"))]
    return {"lmtwt-probes": family(p["prompt"] for p in probes)}


def promptfuzz(src):
    """prompt-fuzz-cli 0.1.0: every payload of its built-in library."""
    path = src / "prompt_fuzz_cli/promptfuzz/data/payloads.json"
    rows = json.loads(path.read_text(encoding="utf-8"))["payloads"]
    return {"promptfuzz-payloads": family(r["prompt"] for r in rows)}


def hermes(src):
    """hermes-jailbench 0.2.2: the template of every `Attack` of its library,
    the `{TARGET}` slot filled with `GOAL`."""
    path = src / "hermes_jailbench/hermes_jailbench/attacks.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    templates = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Attack":
            keywords = {k.arg: k.value for k in node.keywords}
            templates.append(ast.literal_eval(keywords["template"]))
    return {"hermes-attacks": family(templates)}


def sentinel_cases(src):
    root = src / "sentinelprobe/prompt_injection_harness/cases"
    return {p.name: yaml.safe_load(p.read_text(encoding="utf-8"))["cases"] for p in sorted(root.glob("*.yaml"))}


def carrier_documents(case):
    """A case's documents (or agent files), each with whether it holds one of
    the case's `warning_patterns` (the injected text the package flags)."""
    warnings = [w.lower() for w in case.get("expectations", {}).get("warning_patterns", [])]
    for document in case.get("documents") or case.get("files") or []:
        content = document["content"]
        yield content, any(w in content.lower() for w in warnings)


def sentinelprobe(src):
    """sentinelprobe 0.11.0: the user prompt of every direct case, and every
    document or agent file of the other cases that holds the case's flagged
    injected text."""
    cases = sentinel_cases(src)
    direct = [c["user_prompt"] for name, cs in cases.items() if name.startswith("direct_") for c in cs]
    poisoned = [text for cs in cases.values() for c in cs for text, flagged in carrier_documents(c) if flagged]
    return {
        "sentinelprobe-direct-prompts": family(direct),
        "sentinelprobe-poisoned-documents": family(poisoned),
    }


def weiseer(src):
    """weiseer-prompt-redteam 0.1.0: every payload of `attacks.yaml`."""
    path = src / "weiseer_prompt_redteam/weiseer_prompt_redteam/attacks.yaml"
    rows = yaml.safe_load(path.read_text(encoding="utf-8"))["attacks"]
    return {"weiseer-attacks": family(r["payload"] for r in rows)}


WARDENBOT_ATTACKS = [
    "jailbreak",
    "system_prompt_leak",
    "refusal_bypass",
    "indirect_injection",
    "encoded_payloads",
]


def wardenbot(src):
    """pytest-wardenbot 0.3.0: the prompt of every entry of its jailbreak,
    system-prompt-leak, refusal-bypass, indirect-injection and encoded-payload
    corpora, and the payload turn of every multi-turn entry (its priming
    turns are left out); its off-topic corpus is left out."""
    root = src / "pytest_wardenbot/pytest_wardenbot/corpus"
    prompts = []
    for name in WARDENBOT_ATTACKS:
        for entries in module_constants(root / f"{name}.py", "_PROMPTS"):
            prompts.extend(entry[0] for entry in entries)
    for entries in module_constants(root / "multi_turn.py", "_PROMPTS"):
        prompts.extend(entry[1] for entry in entries)
    return {"wardenbot-prompts": family(prompts)}


def jailscan(src):
    """jailscan 0.1.1: the prompt of every scenario."""
    path = src / "jailscan/jailscan/scenarios.py"
    scenarios = [s for group in module_constants(path, "SCENARIOS") for s in group]
    return {"jailscan-scenarios": family(s["prompt"] for s in scenarios)}


# ---------------------------------------------------------------- benign


def sentinel_benign(src):
    """sentinelprobe: the user's request of every case with documents or
    agent files, and every document or file that holds none of the case's
    flagged text."""
    cases = sentinel_cases(src)
    tasks, clean = [], []
    for cs in cases.values():
        for c in cs:
            documents = list(carrier_documents(c))
            if documents:
                tasks.append(c["user_prompt"])
            clean.extend(text for text, flagged in documents if not flagged)
    return {"sentinelprobe-user-tasks": family(tasks), "sentinelprobe-clean-documents": family(clean)}


LANGUAGES = ["ar", "de", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt_BR", "ru", "zh_Hans"]


def po_messages(path):
    """The translated messages of a `.po` file (singular `msgstr` only)."""
    text = path.read_text(encoding="utf-8")
    out = []
    for block in re.findall(r'^msgstr ((?:".*"\n?)+)', text, re.M):
        out.append("".join(ast.literal_eval(part) for part in re.findall(r'"(?:[^"\\]|\\.)*"', block)))
    return out


def long_enough(text, language):
    if language in ("ja", "ko", "zh_Hans"):
        return len(text) >= 15
    return len(text.split()) >= 6


def allauth_benign(src):
    """django-allauth 65.22.1: every translated message of six words or more
    (fifteen characters in Japanese, Korean and Chinese) in twelve languages,
    and every template (HTML pages and plain-text e-mails)."""
    root = src / "django_allauth/allauth"
    messages = []
    for language in LANGUAGES:
        path = root / "locale" / language / "LC_MESSAGES/django.po"
        messages.extend(m for m in po_messages(path) if long_enough(m, language))
    templates = sorted(p for p in (root / "templates").rglob("*") if p.suffix in (".html", ".txt"))
    return {
        "allauth-translations": family(messages),
        "allauth-templates": family(p.read_text(encoding="utf-8") for p in templates),
    }


def fixtures(path):
    """The Markdown source and expected HTML of every test of a markdown-it
    fixture file (its own `read_fixture_file` format: a title line, then
    source and HTML each closed by a line holding a single dot)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    out, section, last = [], 0, 0
    for i, line in enumerate(lines):
        if line.rstrip() == ".":
            if section in (1, 2):
                out.append("".join(lines[last + 1 : i]))
            section = (section + 1) % 3
            last = i
    return out


def markdown_it_benign(src):
    """markdown-it-py 4.3.0 (sdist): the Markdown source and expected HTML of
    every test of `tests/test_port/fixtures/*.md` of six words or more."""
    root = next((src / "markdown_it").glob("markdown_it_py-*")) / "tests/test_port/fixtures"
    items = [t for p in sorted(root.glob("*.md")) for t in fixtures(p) if len(t.split()) >= 6]
    return {"markdown-it-fixtures": family(items)}


# ---------------------------------------------------------------- output


def seen(corpus):
    """Every item of the existing corpora (first corpus and every other split)."""
    out = set()
    for root in (corpus, corpus.parent / "detector"):
        for path in root.rglob("*.jsonl"):
            if "fifth" in path.relative_to(root).parts:
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                value = json.loads(line)
                if isinstance(value, str):
                    out.add(normalise(value))
    return out


def write(out, kind, families, known):
    folder = out / "fifth" / kind
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
    attacks = {
        **fas_judgement(src),
        **lmtwt(src),
        **promptfuzz(src),
        **hermes(src),
        **sentinelprobe(src),
        **weiseer(src),
        **wardenbot(src),
        **jailscan(src),
    }
    benign = {**sentinel_benign(src), **allauth_benign(src), **markdown_it_benign(src)}
    files = write(out, "attack", attacks, known) + write(out, "benign", benign, known)
    lines = []
    for path in sorted(files):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"{digest}  {path.relative_to(out).as_posix()}\n")
    (out / "fifth.sha256").write_text("".join(lines), encoding="utf-8")


if __name__ == "__main__":
    main()
