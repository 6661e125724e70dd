"""The Designer: a new scenario in another domain that keeps the blueprint's difficulty.

The procedural designer samples a catalog design from :mod:`engine.synthesis.catalog`: domain, entity, title,
id/target/feature names and their meaning, class names and balance, vocabularies or media settings, sizes — the
configuration of the generator template (the typed :class:`~engine.synthesis.contracts.Scenario` keeps it as its
``recipe``).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import numpy as np

from . import catalog
from .blueprint import Blueprint

#: most classes 200 training rows carry with at least 9 rows each (the seed's count is kept up to here)
MAX_CLASSES = 200 // 9
#: most numeric features of a tabular scenario (the seed's count is kept up to here)
MAX_NUMERIC = 256


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 4}


def _pick_domain(domains: list[dict], seed: Mapping[str, Any], rng: np.random.Generator) -> dict:
    own = _words(seed["title"])
    others = [d for d in domains if not (_words(d["domain"]) & own)] or domains
    return others[int(rng.integers(len(others)))]


def _priors_imbalanced(k: int, rarest: float, rng: np.random.Generator) -> list[float]:
    rarest = min(max(rarest, 0.02), 1.0 / k)
    decay = (rarest * k) ** (1.0 / max(k - 1, 1)) if rarest * k < 1 else 1.0
    p = np.array([decay ** i for i in range(k)]) * rng.uniform(0.85, 1.15, size=k)
    return list(np.round(p / p.sum(), 4))


def class_priors(blueprint: Blueprint, k: int, n_train: int, rng: np.random.Generator) -> list[float]:
    floor = 3.0 / n_train
    if blueprint.task_type == "binary":
        b = blueprint.class_balance if blueprint.class_balance is not None else 0.5
        b = min(b, 1 - b) * rng.uniform(0.8, 1.2)
        b = float(np.clip(b, max(0.1, floor * 2), 0.5))
        return [round(1 - b, 4), round(b, 4)]
    if blueprint.task_type == "ordinal":
        c = (k - 1) * rng.uniform(0.35, 0.55)
        p = np.exp(-((np.arange(k) - c) ** 2) / (2 * (k / 3.5) ** 2))
    elif blueprint.class_balance is not None and blueprint.task_type == "multiclass":
        p = np.array(_priors_imbalanced(k, max(blueprint.class_balance, floor * 1.5), rng))
    else:
        p = rng.uniform(0.7, 1.3, size=k)
    p = np.maximum(p / p.sum(), floor * 1.2)
    return list(np.round(p / p.sum(), 4))


def _sizes(blueprint: Blueprint, rng: np.random.Generator, k: int = 0) -> tuple[int, int]:
    lo = 50 if k <= 3 else min(200, max(50, 10 * k))
    n_train = int(rng.integers(max(lo, 60), 201)) if blueprint.modality in ("tabular", "text") else \
        int(rng.integers(max(lo, 80), 181))
    n_test = int(np.clip(int(n_train * rng.uniform(1.2, 1.8)), 120, 320))
    return n_train, n_test


def _numeric_features(domain: dict, n: int, anonymized: bool, rng: np.random.Generator) -> list[dict]:
    base = list(domain["numeric"])
    order = rng.permutation(len(base))
    feats: list[dict] = []
    stats = ["mean", "max", "min", "std", "trend", "last"]
    i = 0
    while len(feats) < n:
        name, desc, mean, sd, kind = base[order[i % len(base)]]
        rnd = i // len(base)
        if rnd:
            stat = stats[(rnd - 1) % len(stats)]
            name, desc = f"{name}_{stat}{rnd if rnd > len(stats) else ''}", f"{desc} ({stat} over the period)"
        feats.append({"name": name, "description": desc, "mean": float(mean) * float(rng.uniform(0.8, 1.2)),
                      "sd": float(sd) * float(rng.uniform(0.8, 1.2)), "kind": kind})
        i += 1
    if anonymized:
        for j, f in enumerate(feats):
            f["description"] = "Continuous sensor-style reading." if f["kind"] in ("float", "share") else "Small non-negative count."
            f["name"] = f"f_{j:02d}"
    return feats


def design_tabular(blueprint: Blueprint, seed: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    d = _pick_domain(catalog.TABULAR_DOMAINS, seed, rng)
    anonymized = sum(bool(re.match(r"f_\d+$", c["name"])) for c in seed["columns"]) > 3 and rng.random() < 0.7
    k = 0
    classes: list | None = None
    target_meta = []
    int_coded = any(c["name"] in seed["target_columns"] and c["dtype"] == "int" for c in seed["columns"])
    if blueprint.task_type == "binary":
        targets, classes, k = [d["binary"][0]], [0, 1], 2
        target_desc = d["binary"][1]
    elif blueprint.task_type in ("multiclass", "ordinal"):
        k = max(3, blueprint.n_classes)
        k = min(k, MAX_CLASSES)
        if k > len(d["classes"][1]) or blueprint.n_classes > 20:
            names = sorted({f"{g}_{e}" for g in catalog.SPECIES_GENERA for e in catalog.SPECIES_EPITHETS})
            classes = [names[i] for i in sorted(rng.choice(len(names), size=k, replace=False))]
            targets, target_desc = ["species" if rng.random() < 0.5 else "variety"], "Species name in Genus_species form."
        elif int_coded:
            classes = list(range(1, k + 1))
            targets, target_desc = [f"{d['classes'][0]}_code"], f"{d['classes'][0].replace('_', ' ').capitalize()} code (integer)."
        else:
            classes = list(d["classes"][1][:k])
            targets, target_desc = [d["classes"][0]], f"{d['classes'][0].replace('_', ' ').capitalize()} of the {d['entity']}."
    else:
        n_t = max(1, blueprint.n_targets)
        regs = list(d["regression"])
        targets = [regs[i % len(regs)][0] + (f"_{i // len(regs) + 1}" if i >= len(regs) else "") for i in range(n_t)]
        target_desc = "; ".join(f"{t}: {regs[i % len(regs)][1]}" for i, t in enumerate(targets))
        for i, t in enumerate(targets):
            mean = float(rng.uniform(5, 120))
            target_meta.append({"name": t, "mean": round(mean, 3), "sd": round(mean * float(rng.uniform(0.15, 0.4)), 3),
                                "scale": round(float(rng.uniform(0.5, 20)), 3), "description": regs[i % len(regs)][1]})
    n_train, n_test = _sizes(blueprint, rng, k)
    n_num = int(np.clip(blueprint.n_numeric or 8, 4, MAX_NUMERIC))
    n_num = int(np.clip(n_num + rng.integers(-2, 3), 4, MAX_NUMERIC))
    numeric = _numeric_features(d, n_num, anonymized, rng)
    cats = []
    n_cat = int(np.clip(blueprint.n_categorical, 0, len(d["categorical"])))
    for j in rng.permutation(len(d["categorical"]))[:n_cat]:
        name, desc, levels = d["categorical"][j]
        cats.append({"name": name, "description": desc, "levels": list(levels), "weight": 0.7})
    if blueprint.high_cardinality and not blueprint.code_feature:
        n_lv = int(rng.integers(25, 61))
        base = cats[0]["name"] if cats else d["entity"].split()[0]
        cats.append({"name": f"{base}_code", "description": f"Fine-grained code with {n_lv} levels.",
                     "levels": [f"C{i:02d}" for i in range(n_lv)], "weight": 0.9, "zipf": 0.9})
    code = None
    if blueprint.code_feature:
        code = {"name": f"f_{len(numeric):02d}" if anonymized else "batch_code", "length": 10, "alphabet": "ABCDEFGHIJKLMNOPQRST"[: int(rng.integers(5, 11))],
                "description": "Ten-letter string code; very many distinct values, the letters carry signal."}
    temporal = None
    if blueprint.temporal:
        temporal = {"column": f"{d['entity'].split()[0].replace('-', '_')}_time", "start": f"{int(rng.integers(2009, 2020))}-01-01",
                    "days": int(rng.integers(700, 2200))}
    return {
        "domain": d["domain"], "entity": d["entity"], "title": _title(d["domain"], targets, blueprint),
        "overview": f"Each row is one {d['entity']} from a {d['domain']} dataset. "
                    f"Predict {_target_phrase(targets, blueprint)} from the recorded attributes.",
        "id_column": "id" if rng.random() < 0.6 else ("Id" if rng.random() < 0.5 else f"{d['entity'].split()[0].replace('-', '_')}_id"),
        "id_style": "int" if rng.random() < 0.7 else "prefix", "id_prefix": d["entity"][:1],
        "target_columns": targets, "target_description": target_desc, "targets_meta": target_meta,
        "classes": classes, "class_priors": class_priors(blueprint, k, n_train, rng) if k else None,
        "tabular": {"numeric": numeric, "categorical": cats, "code": code,
                    "active_share": float(rng.uniform(0.45, 0.8)), "interactions": int(rng.integers(1, 4))},
        "temporal": temporal, "n_train": n_train, "n_test": n_test,
    }


def _design_multilabel(blueprint: Blueprint, seed: Mapping[str, Any], rng: np.random.Generator,
                       text: dict[str, Any]) -> dict[str, Any]:
    """A text scenario with several 0/1 flags per row (some implying others)."""
    d = _pick_domain(catalog.MULTILABEL_DOMAINS, seed, rng)
    names = list(d["labels"])
    k = int(np.clip(blueprint.n_classes, 2, len(names)))
    chosen = [names[i] for i in sorted(rng.choice(len(names), size=k, replace=False))]
    n_train, n_test = _sizes(blueprint, rng)
    first = float(rng.uniform(0.25, 0.4))
    rare = float(max(blueprint.class_balance or 0.1, 0.1))
    priors = list(np.round(np.geomspace(first, rare, k) * rng.uniform(0.9, 1.1, size=k), 4))
    text.update({"text_col": d["text_col"], "vocab": {c: d["labels"][c] for c in chosen},
                 "p_decoy": float(rng.uniform(0.03, 0.1)), "mean_len": int(rng.integers(14, 40)), "style": "topic"})
    return {"domain": d["domain"], "entity": d["entity"], "title": f"Flag {k} kinds of issues in {d['entity']}s ({d['domain']})",
            "overview": f"Each row is one {d['entity']}. Several flags can apply to the same {d['entity']}; predict a "
                        f"probability for each flag.",
            "id_column": "id", "id_style": "hex", "id_length": 12, "target_columns": chosen,
            "target_description": "1 if the flag applies, else 0.", "classes": [0, 1], "class_priors": priors,
            "implies": [[1, 0]] if k > 2 and rng.random() < 0.6 else [], "text": text,
            "n_train": n_train, "n_test": n_test}


def design_text(blueprint: Blueprint, seed: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    n_cols = max(1, blueprint.free_text)
    filler = list(catalog.FILLER)
    text: dict[str, Any] = {"filler": filler}
    if blueprint.task_type == "multilabel":
        return _design_multilabel(blueprint, seed, rng, text)
    if blueprint.text_style == "style":
        k = int(np.clip(blueprint.n_classes or 3, 2, 6))
        authors = [catalog.STYLE_NAMES[i] for i in sorted(rng.choice(len(catalog.STYLE_NAMES), size=k, replace=False))]
        codes = [a[:3].upper() for a in authors]
        styles = []
        for _ in codes:
            words = [catalog.STYLE_WORDS[i] for i in rng.choice(len(catalog.STYLE_WORDS), size=6, replace=False)]
            styles.append({"words": words, "p_style": float(rng.uniform(0.05, 0.12)),
                           "p_comma": float(rng.uniform(0.03, 0.15)), "p_semicolon": float(rng.uniform(0.0, 0.06)),
                           "end": str(rng.choice([".", ".", "!", "?", "..."]))})
        n_train, n_test = _sizes(blueprint, rng, k)
        text.update({"text_col": "text" if rng.random() < 0.5 else "sentence", "styles": styles, "style": "style",
                     "mean_len": int(rng.integers(14, 30)), "class_order": codes})
        return {"domain": "literary stylometry", "entity": "sentence",
                "title": f"Attribute sentences to one of {k} writers",
                "overview": f"Each row is one sentence written by one of {k} writers ({', '.join(authors)}). "
                            "Word choice and punctuation habits tell them apart.",
                "id_column": "id", "id_style": "prefix", "id_prefix": "id", "target_columns": ["author"],
                "target_description": "Code of the writer: " + ", ".join(f"{c} = {a}" for c, a in zip(codes, authors)) + ".",
                "classes": codes, "class_priors": class_priors(blueprint, k, n_train, rng), "text": text,
                "n_train": n_train, "n_test": n_test}
    if blueprint.text_style == "quality":
        d: dict[str, Any] = catalog.ESSAY_TOPICS[int(rng.integers(len(catalog.ESSAY_TOPICS)))]
        k = int(np.clip(blueprint.n_classes or 6, 3, 8))
        n_train, n_test = _sizes(blueprint, rng, k)
        text.update({"text_col": "full_text" if rng.random() < 0.5 else "text", "style": "quality", "topic": d["topic"],
                     "advanced": list(catalog.ADVANCED), "basic": list(catalog.BASIC),
                     "base_len": int(rng.integers(40, 90)), "len_per_level": int(rng.integers(8, 25)), "mean_len": 80})
        return {"domain": d["domain"], "entity": d["entity"], "title": f"Grade {d['domain']} from 1 to {k}",
                "overview": f"Each row is one {d['entity']} ({d['domain']}) with a holistic {d['target']} from 1 "
                            f"(weakest) to {k} (strongest).",
                "id_column": f"{d['entity']}_id", "id_style": "hex", "id_length": 7, "target_columns": [d["target"]],
                "target_description": f"Holistic grade from 1 to {k}.", "classes": list(range(1, k + 1)),
                "class_priors": class_priors(blueprint, k, n_train, rng), "text": text, "n_train": n_train,
                "n_test": n_test}
    d = _pick_domain(catalog.TEXT_DOMAINS, seed, rng)
    all_classes = list(d["classes"])
    if blueprint.task_type == "binary":
        a, b = [all_classes[i] for i in rng.choice(len(all_classes), size=2, replace=False)]
        classes, order = [0, 1], [b, a]
        target = f"is_{a}"
        target_desc = f"1 if the {d['entity']} belongs to {a.replace('_', ' ')}, else 0."
        k = 2
    else:
        k = int(np.clip(blueprint.n_classes or 3, 3, len(all_classes)))
        classes = [all_classes[i] for i in sorted(rng.choice(len(all_classes), size=k, replace=False))]
        order, target = classes, d["target"]
        target_desc = f"{d['target'].replace('_', ' ').capitalize()} of the {d['entity']}."
    n_train, n_test = _sizes(blueprint, rng, k)
    text.update({"text_col": d["text_col"], "title_col": d["title_col"] if n_cols > 1 else None,
                 "vocab": {c: d["classes"][c] for c in order}, "class_order": order, "style": "topic",
                 "mean_len": int(rng.integers(15, 45))})
    tab = None
    if blueprint.modality == "text" and blueprint.n_numeric:
        tab = {"numeric": _numeric_features({"numeric": catalog.TEXT_META}, min(blueprint.n_numeric, 5), False, rng),
               "categorical": []}
    return {"domain": d["domain"], "entity": d["entity"], "title": _title(d["domain"], [target], blueprint),
            "overview": f"Each row is one {d['entity']} from a {d['domain']} collection. "
                        f"Predict {_target_phrase([target], blueprint)}.",
            "id_column": f"{d['entity'].split()[-1]}_id" if rng.random() < 0.5 else "id", "id_style": "prefix",
            "id_prefix": d["entity"][:2], "target_columns": [target], "target_description": target_desc,
            "classes": classes, "class_priors": class_priors(blueprint, k, n_train, rng), "text": text, "tabular": tab,
            "n_train": n_train, "n_test": n_test}


def design_media(blueprint: Blueprint, seed: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    k = 2
    if blueprint.modality == "image":
        d = _pick_domain(catalog.IMAGE_DOMAINS, seed, rng)
        shapes = ["bar", "ellipse", "ring", "diagonal", "cross", "blob", "disc"]
        palette = [[int(np.clip(c + rng.integers(-25, 26), 0, 255)) for c in col] for col in d["palette"]]
        media = {"image": {"size": int(blueprint.image_size or 32), "palette": palette, "shape": d["shape"],
                           "distractor": str(rng.choice([s for s in shapes if s != d["shape"]])),
                           "p_distractor": float(rng.uniform(0.3, 0.6)), "texture": float(rng.uniform(8, 22)),
                           "pixel_noise": float(rng.uniform(6, 16))}}
        target, what, col = d["target"], d["object"], "image"
        extra = f"Images are {media['image']['size']}x{media['image']['size']} RGB PNG files."
    elif blueprint.modality == "audio":
        d = _pick_domain(catalog.AUDIO_DOMAINS, seed, rng)
        sr = 2000
        jitter = float(rng.uniform(0.75, 1.3))
        band = [int(d["band"][0] * jitter), int(min(d["band"][1] * jitter, sr / 2 - 50))]
        noise = d["noise"] if rng.random() < 0.6 else str(rng.choice(["ship", "wind", "hum", "rain"]))
        media = {"audio": {"sample_rate": sr, "length": int(blueprint.sequence_length or 4000), "band": band,
                           "sweep": d["sweep"], "noise": noise, "p_distractor": float(rng.uniform(0.3, 0.6))}}
        target, what, col = d["target"], d["event"], "clip_path"
        extra = (f"Each clip is a .npy array of {media['audio']['length']} float32 samples at {sr} Hz "
                 f"({media['audio']['length'] / sr:g} s of mono audio).")
    else:
        d = _pick_domain(catalog.TIMESERIES_DOMAINS, seed, rng)
        k = int(np.clip(blueprint.n_classes or 5, 3, MAX_CLASSES))
        length = int(blueprint.sequence_length or 256)
        media = {"series": {"length": length, "step": 1.0, "noise": float(rng.uniform(0.5, 0.9)),
                            "walk": float(rng.uniform(0.005, 0.02)), "p_switch": float(rng.uniform(0.01, 0.04)),
                            "group_sd": float(rng.uniform(0.6, 1.4))}}
        target, what, col = d["target"], d["level"], "series_path"
        extra = (f"Each window is a .npy array of {length} float32 samples in {d['unit']}; windows of the same "
                 f"{d['group']} share a slow baseline drift.")
    n_train, n_test = _sizes(blueprint, rng, k)
    scenario = {"domain": d["domain"], "entity": d["entity"], "media_column": col, "media_note": extra,
                "id_column": "id" if blueprint.modality == "image" else
                             ("clip" if blueprint.modality == "audio" else "window_id"),
                "id_style": "hex", "id_length": 16 if blueprint.modality == "image" else 10,
                "target_columns": [target], "n_train": n_train, "n_test": n_test, **media}
    if blueprint.modality == "timeseries":
        scenario.update({"classes": list(range(k)), "class_priors": class_priors(blueprint, k, n_train, rng),
                         "group_column": d["group"], "n_groups": int(rng.integers(3, 7)),
                         "title": f"Count {what} from {d['domain']} windows",
                         "overview": f"Each row is a short {d['entity']} of a {d['domain']} trace. Predict how many "
                                     f"{what} there are ({target}, 0 to {k - 1}).",
                         "target_description": f"Number of {what} during the window (0 to {k - 1})."})
    else:
        scenario.update({"classes": [0, 1], "class_priors": class_priors(blueprint, 2, n_train, rng),
                         "title": f"Detect {what}s in {d['domain']} {d['entity']}s",
                         "overview": f"Each row is one {d['entity']} from {d['domain']}. Predict the probability "
                                     f"that it contains a {what}.",
                         "target_description": f"1 if the {d['entity']} contains a {what}, else 0."})
    return scenario


def _title(domain: str, targets: list[str], blueprint: Blueprint) -> str:
    t = ", ".join(targets).replace("_", " ")
    if blueprint.task_type == "binary" and len(targets) == 1 and targets[0].startswith("is_"):
        return f"Predict whether each item is {t[3:]} ({domain})"
    verb = {"binary": "Predict", "multiclass": "Classify", "ordinal": "Grade", "regression": "Estimate",
            "multi_target_regression": "Estimate", "multilabel": "Flag"}.get(blueprint.task_type, "Predict")
    return f"{verb} {t} in {domain}"


def _target_phrase(targets: list[str], blueprint: Blueprint) -> str:
    names = " and ".join(f"`{t}`" for t in targets)
    return {"binary": f"the probability or label of {names}", "regression": f"the value of {names}",
            "multi_target_regression": f"the values of {names}"}.get(blueprint.task_type, names)


def design(blueprint: Blueprint, seed: Mapping[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """The procedural Designer: one scenario for the blueprint, in a domain other than the seed's."""
    if blueprint.modality == "tabular":
        scenario = design_tabular(blueprint, seed, rng)
    elif blueprint.modality == "text":
        scenario = design_text(blueprint, seed, rng)
    else:
        scenario = design_media(blueprint, seed, rng)
    if not (seed.get("hints") or {}).get("id_in_test", True):
        scenario["id_in_test"] = False  # as the seed: the id only in the sample submission, in test.csv's order
    return scenario
