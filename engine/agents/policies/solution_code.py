"""Generic solution scripts for the scripted expert: nothing environment-specific is filled in.

The script finds its way at run time — the id is the column shared by test.csv and sample_submission.csv, the
target is the train column absent from test.csv, the task kind comes from the sample submission's columns, the
modality from the files — so the only decisions left to a policy are the strategy (model family and size) and the
data folder. ``script(strategy, runs)`` fills the template; the strategies are listed in :data:`STRATEGIES`.
"""

from __future__ import annotations

STRATEGIES = ("constant", "linear", "knn", "forest", "boosting")
SIZES = ("small", "large")

PRELUDE = r'''import json, os, warnings
import numpy as np
import pandas as pd
from scipy import sparse
warnings.filterwarnings("ignore")
MEDIA_EXT = (".png", ".jpg", ".jpeg", ".npy", ".wav")


def load(data):
    sample = pd.read_csv(os.path.join(data, "sample_submission.csv"), nrows=5)
    test_head = pd.read_csv(os.path.join(data, "test.csv"), nrows=5)
    idc = next((c for c in sample.columns if c in test_head.columns), sample.columns[0])
    read = lambda name: pd.read_csv(os.path.join(data, name), dtype={idc: str})
    train, test, sample = read("train.csv"), read("test.csv"), read("sample_submission.csv")
    cols = [c for c in sample.columns if c != idc]
    targets = [c for c in train.columns if c not in test.columns and c != idc]
    feats = [c for c in test.columns if c != idc and c in train.columns]
    return train, test, sample, idc, cols, targets, feats


def task_of(train, sample, cols, targets):
    if not set(cols) <= set(train.columns):
        return "proba"  # one probability column per class of the label column
    if len(cols) > 1:
        binary = all(set(pd.unique(train[c].dropna())) <= {0, 1} for c in cols)
        return "multilabel" if binary else "multi_regression"
    y = train[cols[0]].dropna()
    numeric = pd.api.types.is_numeric_dtype(y)
    if numeric and (y.nunique() > 15 or not np.allclose(y, np.round(y))):
        return "regression"
    if numeric and y.nunique() <= 2 and pd.api.types.is_float_dtype(sample[cols[0]]):
        return "binary_proba"
    return "label"


def column_kinds(train, feats):
    numeric = [c for c in feats if pd.api.types.is_numeric_dtype(train[c])]
    other = [c for c in feats if c not in numeric]
    media = [c for c in other if train[c].astype(str).str.lower().str.endswith(MEDIA_EXT).mean() > 0.5]
    text = [c for c in other if c not in media and train[c].astype(str).str.len().mean() > 30]
    cats = [c for c in other if c not in media and c not in text]
    return numeric, cats, text, media


def summary(data):
    train, test, sample, idc, cols, targets, feats = load(data)
    numeric, cats, text, media = column_kinds(train, feats)
    modality = "text" if text else "tabular"
    for c in media:
        ext = str(train[c].iloc[0]).lower()
        modality = "image" if ext.endswith((".png", ".jpg", ".jpeg")) else "audio" if ext.endswith(".wav") else "timeseries"
    return {"rows": len(train), "test_rows": len(test), "id": idc, "targets": targets, "predict": cols,
            "task": task_of(train, sample, cols, targets), "modality": modality, "numeric": len(numeric),
            "categorical": len(cats), "text": text, "media": media,
            "missing": round(float(train[feats].isna().mean().mean()) if feats else 0.0, 3)}


def media_features(paths, data):
    from PIL import Image
    rows = []
    for p in paths:
        full = os.path.join(data, str(p))
        if full.lower().endswith(".npy"):
            a = np.load(full).astype(float).ravel()
        elif full.lower().endswith(".wav"):
            from scipy.io import wavfile
            a = wavfile.read(full)[1].astype(float).ravel()
        else:
            a = np.asarray(Image.open(full).convert("L").resize((12, 12)), dtype=float).ravel() / 255.0
        spec = np.abs(np.fft.rfft(a - a.mean()))
        bands = [b.mean() for b in np.array_split(spec, 8)] if len(spec) >= 8 else [0.0] * 8
        stats = [a.mean(), a.std(), a.min(), a.max(), np.median(a)] + bands
        rows.append(np.concatenate([stats, a[:144] if len(a) <= 4096 else []]))
    width = max(len(r) for r in rows)
    return np.array([np.pad(r, (0, width - len(r))) for r in rows])


def features(train, test, feats, data):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.impute import SimpleImputer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    numeric, cats, text, media = column_kinds(train, feats)
    blocks = []
    if numeric:
        imp, sc = SimpleImputer(strategy="median"), StandardScaler()
        a = sc.fit_transform(imp.fit_transform(train[numeric]))
        b = sc.transform(imp.transform(test[numeric]))
        blocks.append((sparse.csr_matrix(a), sparse.csr_matrix(np.nan_to_num(b))))
    if cats:
        enc = OneHotEncoder(handle_unknown="ignore", max_categories=30)
        blocks.append((enc.fit_transform(train[cats].astype(str)), enc.transform(test[cats].astype(str))))
    for c in text:
        vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, max_features=20000)
        blocks.append((vec.fit_transform(train[c].fillna("").astype(str)), vec.transform(test[c].fillna("").astype(str))))
    for c in media:
        both = media_features(list(train[c]) + list(test[c]), data)
        both = (both - both.mean(0)) / (both.std(0) + 1e-9)
        blocks.append((sparse.csr_matrix(both[:len(train)]), sparse.csr_matrix(both[len(train):])))
    if not blocks:
        z = sparse.csr_matrix(np.zeros((len(train), 1))), sparse.csr_matrix(np.zeros((len(test), 1)))
        blocks.append(z)
    return sparse.hstack([b[0] for b in blocks]).tocsr(), sparse.hstack([b[1] for b in blocks]).tocsr()
'''

MODELS = {
    "constant": r'''
def make_model(kind):
    from sklearn.dummy import DummyClassifier, DummyRegressor
    return DummyRegressor() if kind == "regression" else DummyClassifier(strategy="prior")
''',
    "linear": r'''
def make_model(kind):
    from sklearn.linear_model import LogisticRegression, Ridge
    strength = {"small": 1.0, "large": 4.0}[SIZE]
    return Ridge(alpha=1.0 / strength) if kind == "regression" else LogisticRegression(C=strength, max_iter=3000)
''',
    "knn": r'''
def make_model(kind):
    from sklearn.neighbors import KNeighborsClassifier, KNeighborsRegressor
    k = {"small": 5, "large": 15}[SIZE]
    return KNeighborsRegressor(k, weights="distance") if kind == "regression" else KNeighborsClassifier(k, weights="distance")
''',
    "forest": r'''
def make_model(kind):
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
    n = {"small": 100, "large": 300}[SIZE]
    cls = RandomForestRegressor if kind == "regression" else RandomForestClassifier
    return cls(n_estimators=n, min_samples_leaf=1, random_state=0, n_jobs=1)
''',
    "boosting": r'''
def make_model(kind):
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    it, lr = {"small": (100, 0.1), "large": (300, 0.05)}[SIZE]
    cls = HistGradientBoostingRegressor if kind == "regression" else HistGradientBoostingClassifier
    return cls(max_iter=it, learning_rate=lr, min_samples_leaf=5, random_state=0)
''',
}

RUN = r'''

def dense_if_needed(model, X):
    name = type(model).__name__
    return X.toarray() if name.startswith("HistGradient") and sparse.issparse(X) else X


def fit_predict(kind, X, y, Xt):
    model = make_model("regression" if kind in ("regression", "multi_regression") else "classification")
    model.fit(dense_if_needed(model, X), y)
    Xt = dense_if_needed(model, Xt)
    if kind in ("regression", "multi_regression", "label"):
        return model.predict(Xt), None
    return model.predict_proba(Xt), [str(c) for c in model.classes_]


def solve(data, out):
    train, test, sample, idc, cols, targets, feats = load(data)
    kind = task_of(train, sample, cols, targets)
    X, Xt = features(train, test, feats, data)
    sub = pd.DataFrame({idc: test[idc].astype(str)})
    if kind == "proba":
        label = train[targets[-1]].astype(str).str.replace(r"\.0$", "", regex=True)
        p, classes = fit_predict(kind, X, label, Xt)
        for c in cols:
            sub[c] = p[:, classes.index(str(c))] if str(c) in classes else 0.0
    elif kind in ("multilabel", "multi_regression"):
        for c in cols:
            y = train[c].fillna(train[c].median())
            if kind == "multilabel" and y.nunique() > 1:
                p, classes = fit_predict("binary_proba", X, y.astype(int), Xt)
                sub[c] = p[:, classes.index("1")]
            elif kind == "multilabel":
                sub[c] = float(y.iloc[0])
            else:
                sub[c] = fit_predict("regression", X, y, Xt)[0]
    elif kind == "binary_proba":
        y = train[cols[0]].astype(int)
        p, classes = fit_predict(kind, X, y, Xt)
        sub[cols[0]] = p[:, classes.index("1")] if "1" in classes else 0.0
    else:
        y = train[cols[0]]
        ok = y.notna()
        pred, _ = fit_predict(kind, X[ok.to_numpy()], y[ok], Xt)
        if kind == "regression" and (y.dropna() >= 0).all():
            pred = np.clip(pred, 0, None)
        sub[cols[0]] = pred
    sub.to_csv(out, index=False)
    print(f"wrote {out}: {len(sub)} rows, columns {list(sub.columns)}")
'''


def script(strategy: str, runs: list[tuple[str, str]], size: str = "small") -> str:
    """A complete program: the prelude, the strategy's model, and one ``solve(data_dir, out)`` per run."""
    if strategy not in MODELS:
        raise ValueError(f"unknown strategy {strategy!r}; known: {', '.join(STRATEGIES)}")
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}")
    calls = "\n".join(f"solve({d!r}, {o!r})" for d, o in runs)
    return (f"# strategy: {strategy} ({size})\nSIZE = {size!r}\n" + PRELUDE + MODELS[strategy] + RUN
            + "\n\n" + calls + "\n")


def explore_script() -> str:
    return PRELUDE + '\nprint("SUMMARY " + json.dumps(summary(".")))\n'
