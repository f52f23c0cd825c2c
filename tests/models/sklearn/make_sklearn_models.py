#!/usr/bin/python3
"""Writes scikit-learn models as ai.onnx.ml graphs, with sklearn's own outputs.

Usage: make_sklearn_models.py OUTDIR

Every case fits a real sklearn estimator on small seeded synthetic data, builds
the ONNX-ML graph from the fitted attributes the way skl2onnx lays them out
(skl2onnx itself is not packaged; classifiers are written as with its
zipmap=False option, because ZipMap's sequence-of-maps output has no tensor
form), and stores predict / predict_proba / transform on fresh rows as the
expected outputs, in the ONNX backend-test layout:
  OUTDIR/CASE/model.onnx
  OUTDIR/CASE/test_data_set_0/input_0.pb, output_K.pb
A few cases re-express a fitted tree with the other branch modes, aggregate
functions or opset-3 tensor attributes; they must give the same numbers.
"""
import copy
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, checker, helper, numpy_helper

from sklearn.datasets import make_classification, make_regression
from sklearn.ensemble import (GradientBoostingClassifier, GradientBoostingRegressor,
                              RandomForestClassifier, RandomForestRegressor)
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Binarizer, MinMaxScaler, Normalizer, OneHotEncoder, StandardScaler
from sklearn.svm import SVC, SVR
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

ML = 'ai.onnx.ml'
N_FEATURES = 5
N_TEST = 24


def model_of(name, nodes, n_features, outputs, in_type=TensorProto.FLOAT, ml_opset=1, initializers=(),
             value_info=(), full_check=True):
    """A checked ModelProto with input X [N, n_features] and the given outputs."""
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info('X', in_type, [None, n_features])],
        outputs, list(initializers), value_info=list(value_info))
    model = helper.make_model(graph, producer_name='make_sklearn_models',
                              opset_imports=[helper.make_opsetid('', 13),
                                             helper.make_opsetid(ML, ml_opset)])
    model.ir_version = 8
    checker.check_model(model, full_check=full_check)
    return model


def write_case(outdir, name, model, x, expected):
    data = os.path.join(outdir, name, 'test_data_set_0')
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(outdir, name, 'model.onnx'))
    with open(os.path.join(data, 'input_0.pb'), 'wb') as f:
        f.write(numpy_helper.from_array(x, 'X').SerializeToString())
    for k, (out, value) in enumerate(zip(model.graph.output, expected)):
        with open(os.path.join(data, 'output_%d.pb' % k), 'wb') as f:
            if isinstance(value, onnx.SequenceProto):
                f.write(value.SerializeToString())
            else:
                f.write(numpy_helper.from_array(np.ascontiguousarray(value), out.name).SerializeToString())


def zipmap_expected(labels, proba):
    """What ZipMap gives: one {label: probability} map per row, as a SequenceProto of MapProtos
    (onnx 1.12's numpy_helper.from_dict cannot build these)."""
    seq = onnx.SequenceProto(elem_type=onnx.SequenceProto.MAP)
    for row in proba:
        m = seq.map_values.add()
        if isinstance(labels[0], str):
            m.key_type = TensorProto.STRING
            m.string_keys.extend(l.encode() for l in labels)
        else:
            m.key_type = TensorProto.INT64
            m.keys.extend(int(l) for l in labels)
        m.values.elem_type = onnx.SequenceProto.TENSOR
        m.values.tensor_values.extend(numpy_helper.from_array(np.array(v, dtype=np.float32)) for v in row)
    return seq


def zipmap_output(key_type):
    """seq(map(key_type, float)), built by hand: onnx 1.12's helper has no map type maker."""
    t = onnx.TypeProto()
    m = t.sequence_type.elem_type.map_type
    m.key_type = key_type
    m.value_type.tensor_type.elem_type = TensorProto.FLOAT
    return helper.make_value_info('output_probability', t)


def classifier_outputs(n_classes, label_type=TensorProto.INT64):
    return [helper.make_tensor_value_info('label', label_type, [None]),
            helper.make_tensor_value_info('probabilities', TensorProto.FLOAT, [None, n_classes])]


def regressor_output(name='variable', width=1):
    return [helper.make_tensor_value_info(name, TensorProto.FLOAT, [None, width])]


# ----------------------------------------------------------------- trees

def tree_nodes(tree, tree_id, attrs):
    """Appends one sklearn tree's nodes to attrs (BRANCH_LEQ, left = true)."""
    t = tree.tree_
    for i in range(t.node_count):
        leaf = t.children_left[i] == -1
        attrs['nodes_treeids'].append(tree_id)
        attrs['nodes_nodeids'].append(i)
        attrs['nodes_featureids'].append(0 if leaf else int(t.feature[i]))
        attrs['nodes_values'].append(0.0 if leaf else float(t.threshold[i]))
        attrs['nodes_modes'].append('LEAF' if leaf else 'BRANCH_LEQ')
        attrs['nodes_truenodeids'].append(0 if leaf else int(t.children_left[i]))
        attrs['nodes_falsenodeids'].append(0 if leaf else int(t.children_right[i]))
        attrs['nodes_hitrates'].append(1.0)
        attrs['nodes_missing_value_tracks_true'].append(0)


def empty_tree_attrs():
    keys = ['nodes_treeids', 'nodes_nodeids', 'nodes_featureids', 'nodes_values', 'nodes_modes',
            'nodes_truenodeids', 'nodes_falsenodeids', 'nodes_hitrates', 'nodes_missing_value_tracks_true']
    return {k: [] for k in keys}


def forest_classifier_node(trees, classes, scale):
    """DecisionTree/RandomForest classifier: leaves vote class fractions / n_trees."""
    a = empty_tree_attrs()
    w = {'class_treeids': [], 'class_nodeids': [], 'class_ids': [], 'class_weights': []}
    for tid, est in enumerate(trees):
        tree_nodes(est, tid, a)
        t = est.tree_
        for i in range(t.node_count):
            if t.children_left[i] != -1:
                continue
            frac = t.value[i][0] / t.value[i][0].sum()
            if len(frac) == 2:
                # Binary: skl2onnx keeps only P(second class), under class id 0.
                frac = frac[1:]
            for c, p in enumerate(frac):
                w['class_treeids'].append(tid)
                w['class_nodeids'].append(i)
                w['class_ids'].append(c)
                w['class_weights'].append(float(p * scale))
    return helper.make_node('TreeEnsembleClassifier', ['X'], ['label', 'probabilities'], domain=ML,
                            classlabels_int64s=[int(c) for c in classes], post_transform='NONE', **a, **w)


def forest_regressor_attrs(trees, scale, weight_of=lambda t, i: t.value[i][0][0], tree_ids=None, target_ids=None):
    a = empty_tree_attrs()
    w = {'target_treeids': [], 'target_nodeids': [], 'target_ids': [], 'target_weights': []}
    for n, est in enumerate(trees):
        tid = n if tree_ids is None else tree_ids[n]
        tree_nodes(est, tid, a)
        t = est.tree_
        for i in range(t.node_count):
            if t.children_left[i] == -1:
                w['target_treeids'].append(tid)
                w['target_nodeids'].append(i)
                w['target_ids'].append(0 if target_ids is None else target_ids[n])
                w['target_weights'].append(float(weight_of(t, i) * scale))
    return a, w


def forest_regressor_node(trees, scale, **extra):
    a, w = forest_regressor_attrs(trees, scale)
    a.update(extra)
    return helper.make_node('TreeEnsembleRegressor', ['X'], ['variable'], domain=ML, n_targets=1,
                            post_transform='NONE', **a, **w)


def rewrite_modes(attrs):
    """The same splits through the other five branch modes: x <= t is
    x > t (children swapped), x < next_float(t), x >= next_float(t) (swapped),
    and for a feature that takes only the values 0/1 below, x == or != ."""
    modes, values = attrs['nodes_modes'], attrs['nodes_values']
    trues, falses = attrs['nodes_truenodeids'], attrs['nodes_falsenodeids']
    k = 0
    for i, m in enumerate(modes):
        if m != 'BRANCH_LEQ':
            continue
        t32 = np.float32(values[i])
        if t32 < values[i]:  # the float attribute must keep the same decisions
            t32 = np.nextafter(t32, np.float32(np.inf))
        up = float(np.nextafter(t32, np.float32(np.inf)))
        choice = k % 4
        k += 1
        if choice == 1:
            modes[i] = 'BRANCH_GT'
            trues[i], falses[i] = falses[i], trues[i]
        elif choice == 2:
            modes[i], values[i] = 'BRANCH_LT', up
        elif choice == 3:
            modes[i], values[i] = 'BRANCH_GTE', up
            trues[i], falses[i] = falses[i], trues[i]
        values[i] = float(values[i])


def gradient_boosting_classifier_node(gb, x_ref):
    k = gb.estimators_.shape[1]
    a = empty_tree_attrs()
    w = {'class_treeids': [], 'class_nodeids': [], 'class_ids': [], 'class_weights': []}
    for i in range(gb.estimators_.shape[0]):
        for c in range(k):
            tid = i * k + c
            est = gb.estimators_[i, c]
            tree_nodes(est, tid, a)
            t = est.tree_
            for n in range(t.node_count):
                if t.children_left[n] == -1:
                    w['class_treeids'].append(tid)
                    w['class_nodeids'].append(n)
                    w['class_ids'].append(c)
                    w['class_weights'].append(float(t.value[n][0][0] * gb.learning_rate))
    base = gb._raw_predict_init(x_ref[:1])[0].astype(float).tolist()
    return helper.make_node('TreeEnsembleClassifier', ['X'], ['label', 'probabilities'], domain=ML,
                            classlabels_int64s=[int(c) for c in gb.classes_], base_values=base,
                            post_transform='LOGISTIC' if k == 1 else 'SOFTMAX', **a, **w)


# ----------------------------------------------------------------- linear, SVM

def linear_classifier_node(lr, inp='X', one_row=False):
    coef, icpt = lr.coef_.astype(float), lr.intercept_.astype(float)
    binary = len(lr.classes_) == 2
    if binary and not one_row:
        # skl2onnx writes a binary model as two opposite rows.
        coef, icpt = np.vstack([-coef, coef]), np.concatenate([-icpt, icpt])
    return helper.make_node('LinearClassifier', [inp], ['label', 'probabilities'], domain=ML,
                            classlabels_ints=[int(c) for c in lr.classes_], coefficients=coef.ravel().tolist(),
                            intercepts=icpt.tolist(), post_transform='LOGISTIC' if binary else 'SOFTMAX',
                            multi_class=0)


def linear_regressor_node(lr):
    return helper.make_node('LinearRegressor', ['X'], ['variable'], domain=ML,
                            coefficients=lr.coef_.astype(float).ravel().tolist(),
                            intercepts=[float(lr.intercept_)], targets=1)


def svm_kernel_attrs(svm):
    return dict(kernel_type=svm.kernel.upper(),
                kernel_params=[float(svm._gamma), float(svm.coef0), float(svm.degree)],
                support_vectors=svm.support_vectors_.astype(float).ravel().tolist())


def svm_classifier_node(svc, inp='X'):
    # libsvm's own signs (_dual_coef_, _intercept_): sklearn flips the public
    # attributes of binary models, skl2onnx flips them back.
    return helper.make_node('SVMClassifier', [inp], ['label', 'probabilities'], domain=ML,
                            classlabels_ints=[int(c) for c in svc.classes_],
                            vectors_per_class=[int(v) for v in svc.n_support_],
                            coefficients=svc._dual_coef_.astype(float).ravel().tolist(),
                            rho=svc._intercept_.astype(float).tolist(),
                            prob_a=svc.probA_.astype(float).tolist(), prob_b=svc.probB_.astype(float).tolist(),
                            post_transform='NONE', **svm_kernel_attrs(svc))


def svm_regressor_node(svr):
    return helper.make_node('SVMRegressor', ['X'], ['variable'], domain=ML,
                            coefficients=svr._dual_coef_.astype(float).ravel().tolist(),
                            rho=svr._intercept_.astype(float).tolist(), n_supports=len(svr.support_),
                            post_transform='NONE', **svm_kernel_attrs(svr))


def scaler_node(scaler, out):
    if isinstance(scaler, StandardScaler):
        offset, scale = scaler.mean_, 1.0 / scaler.scale_
    else:  # MinMaxScaler: x * scale_ + min_ = (x - (-min_ / scale_)) * scale_
        offset, scale = -scaler.min_ / scaler.scale_, scaler.scale_
    return helper.make_node('Scaler', ['X'], [out], domain=ML,
                            offset=offset.astype(float).tolist(), scale=scale.astype(float).tolist())


# ----------------------------------------------------------------- cases

def build_cases():
    """Yields (name, model, x_test, expected outputs)."""
    xc, yc = make_classification(n_samples=240, n_features=N_FEATURES, n_informative=3, n_redundant=1,
                                 n_classes=3, n_clusters_per_class=1, random_state=0)
    xb, yb = make_classification(n_samples=240, n_features=N_FEATURES, n_informative=3, random_state=1)
    xr, yr = make_regression(n_samples=240, n_features=N_FEATURES, n_informative=4, noise=5.0, random_state=2)
    xc, xb, xr = (a.astype(np.float32) for a in (xc, xb, xr))
    (xc, tc), (xb, tb), (xr, tr) = ((a[N_TEST:], a[:N_TEST]) for a in (xc, xb, xr))
    yc, yb, yr = yc[N_TEST:], yb[N_TEST:], yr[N_TEST:]
    F = N_FEATURES

    def clf_case(name, est, node_fn, x, y, t, **kw):
        est.fit(x, y)
        model = model_of(name, [node_fn(est)], F, classifier_outputs(len(est.classes_)), **kw)
        return name, model, t, [est.predict(t).astype(np.int64), est.predict_proba(t).astype(np.float32)]

    def reg_case(name, est, node_fn, t, **kw):
        est.fit(xr, yr)
        model = model_of(name, [node_fn(est)], F, regressor_output(), **kw)
        return name, model, t, [est.predict(t).astype(np.float32).reshape(-1, 1)]

    # Trees and forests.
    yield clf_case('decision_tree_classifier', DecisionTreeClassifier(max_depth=5, random_state=0),
                   lambda e: forest_classifier_node([e], e.classes_, 1.0), xc, yc, tc)
    yield clf_case('random_forest_classifier', RandomForestClassifier(n_estimators=12, max_depth=6, random_state=0),
                   lambda e: forest_classifier_node(e.estimators_, e.classes_, 1.0 / len(e.estimators_)), xc, yc, tc)
    yield clf_case('random_forest_classifier_binary',
                   RandomForestClassifier(n_estimators=8, max_depth=5, random_state=1),
                   lambda e: forest_classifier_node(e.estimators_, e.classes_, 1.0 / len(e.estimators_)), xb, yb, tb)
    yield clf_case('gradient_boosting_classifier_binary',
                   GradientBoostingClassifier(n_estimators=15, max_depth=3, random_state=0),
                   lambda e: gradient_boosting_classifier_node(e, xb), xb, yb, tb)
    yield clf_case('gradient_boosting_classifier',
                   GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0),
                   lambda e: gradient_boosting_classifier_node(e, xc), xc, yc, tc)
    yield reg_case('decision_tree_regressor', DecisionTreeRegressor(max_depth=6, random_state=0),
                   lambda e: forest_regressor_node([e], 1.0), tr)
    yield reg_case('random_forest_regressor', RandomForestRegressor(n_estimators=10, max_depth=6, random_state=0),
                   lambda e: forest_regressor_node(e.estimators_, 1.0 / len(e.estimators_)), tr)
    yield reg_case('gradient_boosting_regressor',
                   GradientBoostingRegressor(n_estimators=20, max_depth=3, random_state=0),
                   lambda e: forest_regressor_node(
                       e.estimators_[:, 0], e.learning_rate,
                       base_values=[float(e._raw_predict_init(tr[:1])[0][0])]), tr)

    # The same fitted forests through other encodings of the spec.
    rf = RandomForestRegressor(n_estimators=6, max_depth=5, random_state=3).fit(xr, yr)
    rf_expected = [rf.predict(tr).astype(np.float32).reshape(-1, 1)]
    a, w = forest_regressor_attrs(rf.estimators_, 1.0)
    rewrite_modes(a)
    yield 'random_forest_regressor_all_modes_average', model_of('modes', [helper.make_node(
        'TreeEnsembleRegressor', ['X'], ['variable'], domain=ML, n_targets=1, aggregate_function='AVERAGE',
        **a, **w)], F, regressor_output()), tr, rf_expected
    # The spec meant *_as_tensor for double models: X is double here.
    a, w = forest_regressor_attrs(rf.estimators_, 1.0 / len(rf.estimators_))
    values, weights = a.pop('nodes_values'), w.pop('target_weights')
    a.pop('nodes_hitrates')
    yield 'random_forest_regressor_opset3_tensors', model_of('tensors', [helper.make_node(
        'TreeEnsembleRegressor', ['X'], ['variable'], domain=ML, n_targets=1,
        nodes_values_as_tensor=numpy_helper.from_array(np.array(values, np.float64)),
        target_weights_as_tensor=numpy_helper.from_array(np.array(weights, np.float64)),
        **a, **w)], F, regressor_output(), in_type=TensorProto.DOUBLE, ml_opset=3), tr.astype(np.float64), rf_expected
    # Missing values: every branch sends NaN down its true (<=) side, which is
    # where sklearn sends a value below every threshold.
    a, w = forest_regressor_attrs(rf.estimators_, 1.0 / len(rf.estimators_))
    a['nodes_missing_value_tracks_true'] = [1] * len(a['nodes_modes'])
    tn = tr.copy()
    tn[np.random.RandomState(5).rand(*tn.shape) < 0.3] = np.nan
    yield 'random_forest_regressor_missing_values', model_of('missing', [helper.make_node(
        'TreeEnsembleRegressor', ['X'], ['variable'], domain=ML, n_targets=1, **a, **w)], F,
        regressor_output()), tn, [rf.predict(np.nan_to_num(tn, nan=-1e30)).astype(np.float32).reshape(-1, 1)]
    # Two targets: MIN and MAX over one forest's trees.
    a, w = forest_regressor_attrs(list(rf.estimators_) * 2, 1.0, tree_ids=list(range(12)),
                                  target_ids=[0] * 6 + [1] * 6)
    per_tree = np.stack([t.predict(tr) for t in rf.estimators_], 1)
    for agg, fn in (('MIN', np.min), ('MAX', np.max)):
        yield 'random_forest_regressor_%s_two_targets' % agg.lower(), model_of(agg, [helper.make_node(
            'TreeEnsembleRegressor', ['X'], ['variable'], domain=ML, n_targets=2, aggregate_function=agg,
            base_values=[0.5, -0.5], **a, **w)], F, regressor_output(width=2)), tr, [
                np.stack([fn(per_tree, 1) + 0.5, fn(per_tree, 1) - 0.5], 1).astype(np.float32)]

    # Linear models.
    yield clf_case('logistic_regression_binary', LogisticRegression(), linear_classifier_node, xb, yb, tb)
    yield clf_case('logistic_regression_binary_one_row', LogisticRegression(),
                   lambda e: linear_classifier_node(e, one_row=True), xb, yb, tb)
    yield clf_case('logistic_regression_multiclass', LogisticRegression(max_iter=500), linear_classifier_node,
                   xc, yc, tc)
    # Classes named by strings: skl2onnx then writes classlabels_strings and a string label output.
    names = np.array(['cat', 'dog', 'emu'])
    lr = LogisticRegression(max_iter=500).fit(xc, names[yc])
    indexed = copy.copy(lr)
    indexed.classes_ = np.arange(len(lr.classes_))
    node = linear_classifier_node(indexed)
    del node.attribute[[a.name for a in node.attribute].index('classlabels_ints')]
    node.attribute.append(helper.make_attribute('classlabels_strings', [str(c) for c in lr.classes_]))
    yield ('logistic_regression_string_labels',
           model_of('logistic_regression_string_labels', [node], F, classifier_outputs(3, TensorProto.STRING)), tc,
           [lr.predict(tc).astype(object), lr.predict_proba(tc).astype(np.float32)])
    # skl2onnx's default: the probabilities go through ZipMap into one map per row.
    for key_type, est, names_of in [(TensorProto.INT64, LogisticRegression(max_iter=500).fit(xc, yc), None),
                                    (TensorProto.STRING, lr, names)]:
        indexed = copy.copy(est)
        indexed.classes_ = np.arange(len(est.classes_))
        node = linear_classifier_node(indexed)
        node.output[1] = 'probability_tensor'
        labels = list(est.classes_)
        if key_type == TensorProto.STRING:
            del node.attribute[[a.name for a in node.attribute].index('classlabels_ints')]
            node.attribute.append(helper.make_attribute('classlabels_strings', [str(c) for c in labels]))
            zipmap = helper.make_node('ZipMap', ['probability_tensor'], ['output_probability'], domain=ML,
                                      classlabels_strings=[str(c) for c in labels])
        else:
            zipmap = helper.make_node('ZipMap', ['probability_tensor'], ['output_probability'], domain=ML,
                                      classlabels_int64s=[int(c) for c in labels])
        name = 'logistic_regression_zipmap_' + ('strings' if key_type == TensorProto.STRING else 'int64')
        label_out = helper.make_tensor_value_info('label', key_type, [None])
        predicted = est.predict(tc)
        # full_check=False: onnx 1.12's strict shape inference cannot type ZipMap's map output.
        yield (name, model_of(name, [node, zipmap], F, [label_out, zipmap_output(key_type)], full_check=False), tc,
               [predicted.astype(object if key_type == TensorProto.STRING else np.int64),
                zipmap_expected([str(c) for c in labels] if key_type == TensorProto.STRING else labels,
                                est.predict_proba(tc))])
    yield reg_case('linear_regression', LinearRegression(), linear_regressor_node, tr)
    yield reg_case('ridge', Ridge(alpha=2.0), linear_regressor_node, tr)

    # Support vector machines.
    yield clf_case('svc_rbf_multiclass', SVC(kernel='rbf', probability=True, random_state=0),
                   svm_classifier_node, xc, yc, tc)
    yield clf_case('svc_linear_binary', SVC(kernel='linear', probability=True, random_state=0),
                   svm_classifier_node, xb, yb, tb)
    yield clf_case('svc_poly_multiclass', SVC(kernel='poly', degree=2, probability=True, random_state=0),
                   svm_classifier_node, xc, yc, tc)
    yield reg_case('svr_rbf', SVR(kernel='rbf', C=50.0), svm_regressor_node, tr)
    yield reg_case('svr_linear', SVR(kernel='linear', C=1.0), svm_regressor_node, tr)
    yield reg_case('svr_sigmoid', SVR(kernel='sigmoid', C=1.0, gamma=0.01), svm_regressor_node, tr)

    # Pipelines: a scaler node feeding the estimator.
    for scaler, est, name in ((StandardScaler(), LogisticRegression(max_iter=500), 'standard_scaler_logistic'),
                              (MinMaxScaler(), SVC(probability=True, random_state=0), 'minmax_scaler_svc')):
        pipe = make_pipeline(scaler, est).fit(xc, yc)
        node_fn = linear_classifier_node if isinstance(est, LogisticRegression) else svm_classifier_node
        model = model_of(name, [scaler_node(pipe[0], 'scaled'), node_fn(pipe[1], inp='scaled')], F,
                         classifier_outputs(3))
        yield name, model, tc, [pipe.predict(tc).astype(np.int64), pipe.predict_proba(tc).astype(np.float32)]

    # Transformers.
    def transform_case(name, est, node, x, t, in_type=TensorProto.FLOAT, out_type=TensorProto.FLOAT,
                       out_dtype=np.float32):
        est.fit(x)
        expected = est.transform(t)
        expected = (expected.toarray() if hasattr(expected, 'toarray') else expected).astype(out_dtype)
        out = [helper.make_tensor_value_info('variable', out_type, [None, expected.shape[1]])]
        return name, model_of(name, node if isinstance(node, list) else [node], t.shape[1], out, in_type), t, [expected]

    for scaler in (StandardScaler(), MinMaxScaler()):
        scaler.fit(xr)
        name = type(scaler).__name__.lower()
        yield transform_case(name, scaler, scaler_node(scaler, 'variable'), xr, tr)
    pos, tpos = np.abs(xr), np.abs(tr)
    for norm in ('l1', 'l2', 'max'):
        # MAX divides by the row maximum in ONNX but by the largest magnitude in
        # sklearn: they agree on the non-negative rows used here.
        yield transform_case('normalizer_' + norm, Normalizer(norm=norm),
                             helper.make_node('Normalizer', ['X'], ['variable'], domain=ML, norm=norm.upper()),
                             pos if norm == 'max' else xr, tpos if norm == 'max' else tr)
    yield transform_case('binarizer', Binarizer(threshold=0.25),
                         helper.make_node('Binarizer', ['X'], ['variable'], domain=ML, threshold=0.25), xr, tr)

    rng = np.random.RandomState(4)
    xm, tm = xr.copy(), tr.copy()
    xm[rng.rand(*xm.shape) < 0.15] = np.nan
    tm[rng.rand(*tm.shape) < 0.25] = np.nan
    imp = SimpleImputer(strategy='mean').fit(xm)
    yield transform_case('simple_imputer', imp, helper.make_node(
        'Imputer', ['X'], ['variable'], domain=ML, imputed_value_floats=imp.statistics_.astype(float).tolist(),
        replaced_value_float=float('nan')), xm, tm)

    # OneHotEncoder: one ArrayFeatureExtractor + OneHotEncoder per column, as
    # skl2onnx lays it out, concatenated.
    xi = rng.randint(0, 4, size=(120, 3)).astype(np.int64) * np.array([1, 10, 100], np.int64)
    ti = rng.randint(0, 5, size=(N_TEST, 3)).astype(np.int64) * np.array([1, 10, 100], np.int64)
    ohe = OneHotEncoder(handle_unknown='ignore').fit(xi)
    nodes, parts, inits, infos = [], [], [], []
    for j, cats in enumerate(ohe.categories_):
        # onnx 1.12 infers no type for OneHotEncoder; the full check needs it.
        infos.append(helper.make_tensor_value_info('oh%d' % j, TensorProto.FLOAT, [None, 1, len(cats)]))
        inits.append(numpy_helper.from_array(np.array([j], np.int64), 'col%d' % j))
        inits.append(numpy_helper.from_array(np.array([-1, len(cats)], np.int64), 'shape%d' % j))
        nodes += [helper.make_node('ArrayFeatureExtractor', ['X', 'col%d' % j], ['x%d' % j], domain=ML),
                  helper.make_node('OneHotEncoder', ['x%d' % j], ['oh%d' % j], domain=ML,
                                   cats_int64s=[int(c) for c in cats], zeros=1),
                  helper.make_node('Reshape', ['oh%d' % j, 'shape%d' % j], ['flat%d' % j])]
        parts.append('flat%d' % j)
    nodes.append(helper.make_node('Concat', parts, ['variable'], axis=1))
    expected = ohe.transform(ti).toarray().astype(np.float32)
    out = [helper.make_tensor_value_info('variable', TensorProto.FLOAT, [None, expected.shape[1]])]
    yield 'one_hot_encoder', model_of('one_hot_encoder', nodes, 3, out, TensorProto.INT64,
                                      initializers=inits, value_info=infos), ti, [expected]


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: make_sklearn_models.py OUTDIR')
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    n = 0
    for name, model, x, expected in build_cases():
        write_case(outdir, name, model, x, expected)
        n += 1
    print('wrote %d sklearn cases to %s' % (n, outdir))


if __name__ == '__main__':
    main()
