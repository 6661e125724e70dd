"""The ``procedural`` backend: every role from templates and parametrized generators — offline, no LLM,
deterministic for a given RNG (carried in the request's context).

Its Designer samples a scenario from the catalog (``designer.design``) and keeps that configuration as the
scenario's ``recipe``; its Data engineer renders the generator template with the recipe and difficulty knobs,
scaling the signal on the verifier's evidence (stronger when not learnable, weaker when saturated)."""

from __future__ import annotations

from typing import Any

from ..blueprint import analyze
from ..contracts import Blueprint, ColumnSpec, GeneratorProgram, Knobs, ReviewVerdict, Scenario
from ..describe import write_description
from ..designer import design
from ..engineer import build_config, difficulty, render_program
from ..grader import grade_spec
from ..roles import RoleContext
from ...config import Settings
from .base import OfflineBackend

TEMPLATE_DEPENDENCE = {
    "tabular": "a sparse random combination of the numeric and categorical features (with interactions and "
               "nonlinear effects) plus noise, drawn by the generator template from its seed",
    "text": "class-specific vocabulary or style mixed into shared filler text, plus noise",
    "image": "the target object drawn into textured tiles among distractor shapes",
    "audio": "the target event (a chirp, knock or tone) mixed under background noise",
    "timeseries": "telegraph-noise level changes whose count is the target, over group-level drift",
}


class ProceduralBackend(OfflineBackend):
    name = "procedural"

    @staticmethod
    def analyst(ctx: RoleContext) -> dict[str, Any]:
        return analyze(ctx.seed).model_dump()

    @staticmethod
    def designer(ctx: RoleContext) -> dict[str, Any]:
        blueprint = _need(ctx.blueprint)
        return scenario_from_recipe(design(blueprint, ctx.seed, ctx.rng), blueprint).model_dump()

    @staticmethod
    def grader(ctx: RoleContext) -> dict[str, Any]:
        return {"metric": _need(ctx.blueprint).metric}

    @staticmethod
    def engineer(ctx: RoleContext) -> dict[str, Any]:
        blueprint, scenario, metric = _need(ctx.blueprint), _need(ctx.scenario), _need(ctx.metric)
        previous = ctx.previous.knobs if ctx.previous is not None else None
        if previous is not None and ctx.evidence is not None:
            signal = min(4.5, max(0.1, previous.signal * ctx.evidence.signal_factor))
            knobs = previous.model_copy(update={"signal": round(signal, 4)})
        else:
            knobs = Knobs(**difficulty(blueprint, ctx.rng))
        recipe = _need(scenario.recipe)
        spec = grade_spec(blueprint, recipe, metric)
        program = render_program(build_config(blueprint, recipe, spec, knobs.model_dump()))
        return GeneratorProgram(program=program, notes="the procedural template with its difficulty knobs",
                                knobs=knobs).model_dump()

    @staticmethod
    def describer(ctx: RoleContext) -> dict[str, Any]:
        return {"markdown": write_description(_need(_need(ctx.scenario).recipe), _need(ctx.spec).to_dict())}

    @staticmethod
    def reviewer(ctx: RoleContext) -> dict[str, Any]:
        return ReviewVerdict(ok=True).model_dump()


def _need(value: Any) -> Any:
    if value is None:
        raise ValueError("the procedural backend lacks an input this role needs")
    return value


def scenario_from_recipe(recipe: dict[str, Any], blueprint: Blueprint) -> Scenario:
    """The typed scenario of a catalog design (the design itself stays attached as ``recipe``)."""
    columns: list[ColumnSpec] = []
    temporal = recipe.get("temporal")
    if temporal:
        columns.append(ColumnSpec(name=temporal["column"], type="datetime", meaning="timestamp of the row (UTC)",
                                  distribution=f"from {temporal['start']} over {temporal['days']} days; test after train"))
    text = recipe.get("text") or {}
    for key, what in (("title_col", "short title"), ("text_col", "free text")):
        if text.get(key):
            columns.append(ColumnSpec(name=text[key], type="text", meaning=f"{what} of the {recipe['entity']}",
                                      distribution=f"about {text.get('mean_len', 20)} words"))
    tab = recipe.get("tabular") or {}
    for f in tab.get("numeric", []):
        columns.append(ColumnSpec(name=f["name"], type="float" if f.get("kind") in ("float", "share") else "integer",
                                  meaning=f.get("description", "numeric feature"),
                                  distribution=f"around {f['mean']:.4g} (sd {f['sd']:.4g})"))
    for c in tab.get("categorical", []):
        columns.append(ColumnSpec(name=c["name"], type="category", meaning=c.get("description", "category"),
                                  distribution=f"{len(c['levels'])} levels", levels=[str(v) for v in c["levels"]]))
    if tab.get("code"):
        columns.append(ColumnSpec(name=tab["code"]["name"], type="code", meaning=tab["code"]["description"],
                                  distribution=f"{tab['code']['length']} letters of {tab['code']['alphabet']}"))
    if recipe.get("media_column"):
        columns.append(ColumnSpec(name=recipe["media_column"], type="media_path", meaning="path of the media file",
                                  distribution=recipe.get("media_note") or "one file per row"))
    if recipe.get("group_column"):
        columns.append(ColumnSpec(name=recipe["group_column"], type="group", meaning="group the row belongs to",
                                  distribution=f"{recipe.get('n_groups', 'a few')} groups"))
    meaning = recipe.get("target_description") or "; ".join(m["description"] for m in recipe.get("targets_meta", []))
    return Scenario(domain=recipe["domain"], entity=recipe["entity"], title=recipe["title"],
                    overview=recipe["overview"], id_column=recipe["id_column"], columns=columns,
                    target_columns=list(recipe["target_columns"]), target_meaning=meaning or "the target",
                    target_dependence=TEMPLATE_DEPENDENCE[blueprint.modality], classes=recipe.get("classes"),
                    class_priors=recipe.get("class_priors"), n_train=int(recipe["n_train"]),
                    n_test=int(recipe["n_test"]), media_column=recipe.get("media_column"), recipe=recipe)


def build(settings: Settings) -> ProceduralBackend:
    """The procedural backend (it needs no settings: everything it draws comes with each request's RNG)."""
    return ProceduralBackend()
