#!/usr/bin/env python3
"""Builds the sixth held-out split of the generalization corpus from unpacked
public packages that no earlier split came from.

Usage: extract_sixth.py SRC_DIR CORPUS_DIR OUT_DIR

SRC_DIR holds one folder per archive, each the archive unpacked (see
PROVENANCE.md for the commands and the sha256 of every archive):

    llmstrike/          llmstrike-0.1.0-py3-none-any.whl
    keelson_ai/         keelson_ai-0.5.0-py3-none-any.whl
    oubliette_dungeon/  oubliette_dungeon-1.1.0-py3-none-any.whl
    promptpressure/     promptpressure-0.1.1-py3-none-any.whl
    aion_redteam/       aion_redteam-0.2.0-py3-none-any.whl
    agentred/           agentred-0.1.2-py3-none-any.whl
    wagtail/            wagtail-7.1.1-py3-none-any.whl

CORPUS_DIR is this corpus's folder (`tests/corpus/generalization`); with it,
its siblings `tests/corpus/detector` and `tests/corpus/training`: an item
already present in any of them, in any other split, is left out. Nothing is
imported from any package (Python files are read with `ast`, YAML with
PyYAML). Items are normalised as in `extract.py`, deduplicated within each
family and sorted. The whole output is held out:
OUT_DIR/sixth/{attack,benign}/FAMILY.jsonl, one JSON string per line, and
OUT_DIR/sixth.sha256 in `sha256sum` format.
"""

import ast
import hashlib
import json
import pathlib
import re
import sys

import yaml


def normalise(text):
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = [line.rstrip() for line in text.split("\n")]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n")


def family(items):
    out = set()
    for item in items:
        if isinstance(item, str) and item.strip():
            out.add(normalise(item))
    return sorted(out)


def load_yaml(path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


# ---------------------------------------------------------------- attacks


def llmstrike(src):
    """llmstrike 0.1.0: every payload of every technique of its six technique
    files (direct and indirect injection, RAG poisoning, system-prompt
    extraction, jailbreak, data exfiltration)."""
    root = src / "llmstrike/llmstrike/techniques_data"
    payloads = []
    for path in sorted(root.glob("*.yaml")):
        for technique in load_yaml(path)["techniques"]:
            payloads.extend(technique.get("payloads", []))
    return {"llmstrike-techniques": family(payloads)}


def keelson_probes(src):
    root = src / "keelson_ai/keelson/probes"
    return [(path, load_yaml(path)) for path in sorted(root.glob("*/*.yaml"))]


def keelson(src):
    """keelson-ai 0.5.0: the last user turn (the one that carries the payload
    of a multi-turn probe) of every probe filed under OWASP LLM01, prompt
    injection, whatever its category."""
    out = []
    for _, probe in keelson_probes(src):
        if not str(probe.get("owasp_id", "")).startswith("LLM01"):
            continue
        turns = [t["content"] for t in probe.get("turns", []) if t.get("role") == "user"]
        if turns:
            out.append(turns[-1])
    return {"keelson-injection-probes": family(out)}


# oubliette-dungeon's categories that are not injections: load and
# compliance questions.
OUBLIETTE_LEFT_OUT = ("compliance_testing", "resource_abuse")


def oubliette_scenarios(src):
    return load_yaml(src / "oubliette_dungeon/oubliette_dungeon/scenarios/default.yaml")


def oubliette(src):
    """oubliette-dungeon 1.1.0: the prompts of every scenario of its default
    library, less its compliance-testing and resource-abuse categories: a
    single-turn scenario's prompt, each of its variants' prompts (an encoded
    variant's example) and the last turn of a multi-turn sequence."""
    prompts = []
    for s in oubliette_scenarios(src):
        if s.get("category") in OUBLIETTE_LEFT_OUT:
            continue
        prompts.append(s.get("prompt"))
        prompts.extend(v.get("prompt", v.get("example")) for v in s.get("variants") or [])
        turns = s.get("multi_turn_sequence") or []
        if turns:
            prompts.append(turns[-1].get("prompt"))
    return {"oubliette-scenarios": family(prompts)}


def literal_strings(node):
    """The string a node spells with literals only (a constant, constants
    joined by `+` or implicit concatenation, a constant repeated by `*`), or
    None."""
    try:
        value = ast.literal_eval(node)
    except ValueError:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = literal_strings(node.left), literal_strings(node.right)
            return left + right if left is not None and right is not None else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            text, times = literal_strings(node.left), node.right
            if text is not None and isinstance(times, ast.Constant) and isinstance(times.value, int):
                return text * times.value
        return None
    return value if isinstance(value, str) else None


# promptpressure's suites that are injections: prompt injection, system
# prompt disclosure, data exfiltration (its tool-abuse suite asks the agent
# directly to misuse a tool).
PROMPTPRESSURE_SUITES = ("PI_SCENARIOS", "SP_SCENARIOS", "DX_SCENARIOS")


def promptpressure(src):
    """promptpressure 0.1.1: the `prompt` of every scenario of its prompt
    injection, system-prompt disclosure and data exfiltration suites."""
    path = src / "promptpressure/promptpressure/suites/scenarios.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    prompts = []
    for node in tree.body:
        target = getattr(node, "target", None) or (node.targets[0] if isinstance(node, ast.Assign) else None)
        if not (isinstance(target, ast.Name) and target.id in PROMPTPRESSURE_SUITES):
            continue
        for scenario in node.value.elts:
            for key, value in zip(scenario.keys, scenario.values):
                if isinstance(key, ast.Constant) and key.value == "prompt":
                    text = literal_strings(value)
                    if text is None:
                        raise SystemExit(f"{path}: a prompt that is not a literal string")
                    prompts.append(text)
    return {"promptpressure-scenarios": family(prompts)}


def aion_scenarios(src):
    root = src / "aion_redteam/aion_redteam/scenarios"
    return [load_yaml(path) for path in sorted(root.glob("*/*.yaml"))]


def aion(src):
    """aion-redteam 0.2.0: the attack payload of every scenario."""
    return {"aion-payloads": family(s["attack"]["payload"] for s in aion_scenarios(src))}


# agentred's attack files that are injections (its tool-misuse file asks the
# agent directly to misuse a tool).
AGENTRED_FILES = ("prompt_injection.yaml", "prompt_leakage.yaml", "data_leakage.yaml")


def agentred(src):
    """agentred 0.1.2: the payload of every attack of its prompt-injection,
    prompt-leakage and data-leakage files."""
    root = src / "agentred/agentred/data/attacks"
    payloads = [a["payload"] for name in AGENTRED_FILES for a in load_yaml(root / name)["attacks"]]
    return {"agentred-attacks": family(payloads)}


# ---------------------------------------------------------------- benign


def descriptions(src):
    """Prose about attacks, written to a reader, addressing no model: the
    description and remediation of every llmstrike technique, the objective
    of every keelson probe, the description and expected behaviour of every
    oubliette scenario, the description and mitigations of every aion
    scenario."""
    root = src / "llmstrike/llmstrike/techniques_data"
    llm = []
    for path in sorted(root.glob("*.yaml")):
        for technique in load_yaml(path)["techniques"]:
            llm.extend([technique.get("description"), technique.get("remediation")])
    keel = [probe.get("objective") for _, probe in keelson_probes(src)]
    oub = [t for s in oubliette_scenarios(src) for t in (s.get("description"), s.get("expected_behavior"))]
    ai = []
    for s in aion_scenarios(src):
        ai.append(s.get("description"))
        ai.extend(m for m in s.get("mitigations", []) if isinstance(m, str))
    return {
        "llmstrike-descriptions": family(llm),
        "keelson-objectives": family(keel),
        "oubliette-descriptions": family(oub),
        "aion-descriptions": family(ai),
    }


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


def wagtail(src):
    """wagtail 7.1.1: every translated message of six words or more (fifteen
    characters in Japanese, Korean and Chinese) of its admin and core
    catalogues in twelve languages, less those holding a URL (help texts
    giving example addresses), and every HTML template of its admin."""
    root = src / "wagtail/wagtail"
    messages = []
    for language in LANGUAGES:
        for catalogue in ("admin/locale", "locale"):
            path = root / catalogue / language / "LC_MESSAGES/django.po"
            messages.extend(
                m for m in po_messages(path) if long_enough(m, language) and "://" not in m
            )
    templates = sorted((root / "admin/templates").rglob("*.html"))
    return {
        "wagtail-translations": family(messages),
        "wagtail-admin-templates": family(p.read_text(encoding="utf-8") for p in templates),
    }


# ---------------------------------------------------------------- output


def seen(corpus):
    """Every item of the existing corpora (first corpus, training texts and
    every other split)."""
    out = set()
    for root in (corpus, corpus.parent / "detector", corpus.parent / "training"):
        for path in root.rglob("*.jsonl"):
            if "sixth" in path.relative_to(root).parts:
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                value = json.loads(line)
                if isinstance(value, str):
                    out.add(normalise(value))
    return out


def write(out, kind, families, known):
    folder = out / "sixth" / kind
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
        **llmstrike(src),
        **keelson(src),
        **oubliette(src),
        **promptpressure(src),
        **aion(src),
        **agentred(src),
    }
    benign = {**descriptions(src), **wagtail(src)}
    # A text both an injection string and a benign text of this split stays
    # an injection string only.
    attack_texts = {t for items in attacks.values() for t in items}
    benign = {name: [t for t in items if t not in attack_texts] for name, items in benign.items()}
    files = write(out, "attack", attacks, known) + write(out, "benign", benign, known)
    lines = []
    for path in sorted(files):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"{digest}  {path.relative_to(out).as_posix()}\n")
    (out / "sixth.sha256").write_text("".join(lines), encoding="utf-8")


if __name__ == "__main__":
    main()
