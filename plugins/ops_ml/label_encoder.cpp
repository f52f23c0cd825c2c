// label_encoder.cpp - LabelEncoder, every opset:
//   1: classes_strings maps strings to their index (default_int64) and
//      int64 indices back to strings (default_string);
//   2-3: keys_{floats,int64s,strings} -> values_{floats,int64s,strings};
//   4+: keys and values may also be tensors (keys_tensor, values_tensor: string,
//      int64, int32, int16, float or double) with default_tensor for unknown keys.
// Keys are looked up by exact value; a NaN key matches NaN inputs.
#include "features.hpp"
#include "registry.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace singa {
namespace ops {
namespace ml {
namespace {

using sdk::bit;

constexpr int64_t kGrain = 4096;
constexpr uint64_t kKeyTypes = bit(SINGA_ONNX_STRING) | bit(SINGA_ONNX_INT64) | bit(SINGA_ONNX_INT32) |
                               bit(SINGA_ONNX_INT16) | bit(SINGA_ONNX_FLOAT) | bit(SINGA_ONNX_DOUBLE);

bool is_int_type(int32_t t) { return t == SINGA_ONNX_INT64 || t == SINGA_ONNX_INT32 || t == SINGA_ONNX_INT16; }

// One column of typed values: keys or values, whichever attribute gave them.
struct Column {
  int32_t dtype = SINGA_ONNX_UNDEFINED;
  std::vector<std::string> strs;
  std::vector<int64_t> ints;
  std::vector<double> reals;
  size_t size() const { return dtype == SINGA_ONNX_STRING ? strs.size() : is_int_type(dtype) ? ints.size() : reals.size(); }
};

void from_tensor(const sdk::Node& node, const char* name, const sdk::Tensor& t, Column& c) {
  c.dtype = t.dtype();
  if (!(kKeyTypes & bit(c.dtype)))
    node.fail(std::string("attribute ") + name + " is a " + sdk::dtype_name(c.dtype) +
              " tensor; it must be string, int64, int32, int16, float or double");
  const int64_t n = t.numel();
  if (c.dtype == SINGA_ONNX_STRING) {
    for (int64_t i = 0; i < n; ++i) c.strs.emplace_back(sdk::Context::string_at(t, i));
  } else if (is_int_type(c.dtype)) {
    for (int64_t i = 0; i < n; ++i) c.ints.push_back(t.int_at(i));
  } else {
    for (int64_t i = 0; i < n; ++i)
      c.reals.push_back(c.dtype == SINGA_ONNX_FLOAT ? double(t.data<float>()[i]) : t.data<double>()[i]);
  }
}

// Reads <prefix>_floats / _int64s / _strings / _tensor; exactly one must be set.
Column read_column(const sdk::Node& node, const std::string& prefix) {
  Column c;
  int given = 0;
  const std::string f = prefix + "_floats", i = prefix + "_int64s", s = prefix + "_strings", t = prefix + "_tensor";
  if (node.has_attr(f.c_str())) {
    ++given;
    c.dtype = SINGA_ONNX_FLOAT;
    for (float v : node.attr_floats(f.c_str())) c.reals.push_back(v);
  }
  if (node.has_attr(i.c_str())) {
    ++given;
    c.dtype = SINGA_ONNX_INT64;
    c.ints = node.attr_ints(i.c_str());
  }
  if (node.has_attr(s.c_str())) {
    ++given;
    c.dtype = SINGA_ONNX_STRING;
    c.strs = node.attr_strings(s.c_str());
  }
  const sdk::Tensor tt = node.attr_tensor(t.c_str());
  if (tt.present()) {
    ++given;
    if (node.opset() < 4) node.fail("attribute " + t + " needs ai.onnx.ml opset 4 or later");
    from_tensor(node, t.c_str(), tt, c);
  } else if (node.has_attr(t.c_str())) {
    node.fail("attribute " + t + " could not be read as a tensor");
  }
  if (given != 1)
    node.fail("give exactly one of " + f + ", " + i + ", " + s + (node.opset() >= 4 ? ", " + t : std::string()) +
              " (" + std::to_string(given) + " given)");
  return c;
}

class LabelEncoder {
 public:
  explicit LabelEncoder(const sdk::Node& node) {
    if (node.opset() < 2) {
      init_opset1(node);
      return;
    }
    keys_ = read_column(node, "keys");
    values_ = read_column(node, "values");
    if (keys_.size() != values_.size())
      node.fail("the keys have " + std::to_string(keys_.size()) + " entries but the values have " +
                std::to_string(values_.size()));
    index_keys(node);
    read_default(node);
  }

  void compute(sdk::Context& ctx) const {
    sdk::check(ctx.has_input(0), "input X is missing");
    const sdk::Tensor x = ctx.input(0);
    if (opset1_) {
      // The input's type picks the direction.
      if (x.dtype() == SINGA_ONNX_STRING) run(ctx, x, keys_, values_, default_);
      else if (x.dtype() == SINGA_ONNX_INT64) run(ctx, x, back_keys_, back_values_, back_default_);
      else sdk::fail(std::string("X must be string or int64 at opset 1, got ") + sdk::dtype_name(x.dtype()));
      return;
    }
    if (x.dtype() != keys_.dtype)
      sdk::fail(std::string("X is ") + sdk::dtype_name(x.dtype()) + " but the keys are " + sdk::dtype_name(keys_.dtype));
    run(ctx, x, keys_, values_, default_);
  }

 private:
  struct Lookup {
    std::unordered_map<std::string, int32_t> strs;
    std::unordered_map<int64_t, int32_t> ints;
    std::unordered_map<double, int32_t> reals;  // +0 and -0 hash alike
    int32_t nan = -1;
  };

  void init_opset1(const sdk::Node& node) {
    opset1_ = true;
    const std::vector<std::string> classes = node.attr_strings("classes_strings");
    keys_.dtype = SINGA_ONNX_STRING;
    keys_.strs = classes;
    values_.dtype = SINGA_ONNX_INT64;
    back_keys_.dtype = SINGA_ONNX_INT64;
    back_values_.dtype = SINGA_ONNX_STRING;
    back_values_.strs = classes;
    for (size_t i = 0; i < classes.size(); ++i) {
      values_.ints.push_back(int64_t(i));
      back_keys_.ints.push_back(int64_t(i));
    }
    for (size_t i = 0; i < classes.size(); ++i) lookup_.strs.emplace(classes[i], int32_t(i));  // first wins
    for (size_t i = 0; i < classes.size(); ++i) back_lookup_.ints.emplace(int64_t(i), int32_t(i));
    default_.dtype = SINGA_ONNX_INT64;
    default_.ints = {node.attr_int("default_int64", -1)};
    back_default_.dtype = SINGA_ONNX_STRING;
    back_default_.strs = {node.attr_string("default_string", "_Unused")};
  }

  void index_keys(const sdk::Node& node) {
    const size_t n = keys_.size();
    if (n > size_t(INT32_MAX)) node.fail("too many keys");
    // A repeated key keeps its first value.
    for (size_t i = 0; i < n; ++i) {
      if (keys_.dtype == SINGA_ONNX_STRING) {
        lookup_.strs.emplace(keys_.strs[i], int32_t(i));
      } else if (is_int_type(keys_.dtype)) {
        lookup_.ints.emplace(keys_.ints[i], int32_t(i));
      } else if (std::isnan(keys_.reals[i])) {
        if (lookup_.nan < 0) lookup_.nan = int32_t(i);
      } else {
        lookup_.reals.emplace(keys_.reals[i], int32_t(i));
      }
    }
  }

  // default_tensor (opset 4) wins; else the default_* attribute of the
  // values' type; else -1 for integers and -0.0 for reals.
  void read_default(const sdk::Node& node) {
    default_.dtype = values_.dtype;
    const sdk::Tensor t = node.attr_tensor("default_tensor");
    if (t.present()) {
      if (t.dtype() != values_.dtype)
        node.fail(std::string("default_tensor is ") + sdk::dtype_name(t.dtype()) + " but the values are " +
                  sdk::dtype_name(values_.dtype));
      if (t.numel() != 1) node.fail("default_tensor must hold exactly one value, it has " + std::to_string(t.numel()));
      from_tensor(node, "default_tensor", t, default_);
      return;
    }
    if (values_.dtype == SINGA_ONNX_STRING) default_.strs = {node.attr_string("default_string", "_Unused")};
    else if (values_.dtype == SINGA_ONNX_INT64) default_.ints = {node.attr_int("default_int64", -1)};
    else if (is_int_type(values_.dtype)) default_.ints = {-1};
    else if (values_.dtype == SINGA_ONNX_FLOAT) default_.reals = {double(node.attr_float("default_float", -0.0f))};
    else default_.reals = {-0.0};
  }

  const Lookup& lookup_for(const Column& keys) const { return &keys == &back_keys_ ? back_lookup_ : lookup_; }

  // Index of each element of x among the keys, -1 when absent.
  std::vector<int32_t> find_all(sdk::Context& ctx, const sdk::Tensor& x, const Lookup& lk) const {
    const int64_t n = x.numel();
    std::vector<int32_t> idx(static_cast<size_t>(n), -1);
    const int32_t t = x.dtype();
    if (t == SINGA_ONNX_STRING) {
      ctx.parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
        std::string s;
        for (int64_t i = b; i < e; ++i) {
          s.assign(sdk::Context::string_at(x, i));
          auto it = lk.strs.find(s);
          if (it != lk.strs.end()) idx[size_t(i)] = it->second;
        }
      });
      return idx;
    }
    sdk::dispatch(t, [&](auto tag) {
      using T = decltype(tag);
      const T* p = x.data<T>();
      ctx.parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          if constexpr (std::is_integral_v<T>) {
            auto it = lk.ints.find(int64_t(p[i]));
            if (it != lk.ints.end()) idx[size_t(i)] = it->second;
          } else {
            const double v = double(p[i]);
            if (std::isnan(v)) {
              idx[size_t(i)] = lk.nan;
            } else {
              auto it = lk.reals.find(v);
              if (it != lk.reals.end()) idx[size_t(i)] = it->second;
            }
          }
        }
      });
    }, kKeyTypes & ~bit(SINGA_ONNX_STRING));
    return idx;
  }

  void run(sdk::Context& ctx, const sdk::Tensor& x, const Column& keys, const Column& values, const Column& def) const {
    const std::vector<int32_t> idx = find_all(ctx, x, lookup_for(keys));
    const int64_t n = x.numel();
    const sdk::Tensor y = ctx.output(0, x.shape(), values.dtype);
    if (values.dtype == SINGA_ONNX_STRING) {
      for (int64_t i = 0; i < n; ++i) {
        const int32_t k = idx[size_t(i)];
        ctx.set_string(0, i, k < 0 ? def.strs[0] : values.strs[size_t(k)]);
      }
      return;
    }
    sdk::dispatch(values.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* q = y.data<T>();
      if constexpr (std::is_integral_v<T>) {
        const T d = T(def.ints[0]);
        for (int64_t i = 0; i < n; ++i) {
          const int32_t k = idx[size_t(i)];
          q[i] = k < 0 ? d : T(values.ints[size_t(k)]);
        }
      } else {
        const T d = T(def.reals[0]);
        for (int64_t i = 0; i < n; ++i) {
          const int32_t k = idx[size_t(i)];
          q[i] = k < 0 ? d : T(values.reals[size_t(k)]);
        }
      }
    }, kKeyTypes & ~bit(SINGA_ONNX_STRING));
  }

  bool opset1_ = false;
  Column keys_, values_, default_;
  Lookup lookup_;
  // Opset 1's int64 -> string direction.
  Column back_keys_, back_values_, back_default_;
  Lookup back_lookup_;
};

}  // namespace

void register_label_encoder(sdk::Registrar& reg) {
  const uint64_t v1 = bit(SINGA_ONNX_STRING) | bit(SINGA_ONNX_INT64);
  const uint64_t v2 = bit(SINGA_ONNX_STRING) | bit(SINGA_ONNX_INT64) | bit(SINGA_ONNX_FLOAT);
  reg.kernel<LabelEncoder>(kDomain, "LabelEncoder", 1, 1, "cpu", {{"T1", 0, v1}, {"T2", -1, v1}});
  reg.kernel<LabelEncoder>(kDomain, "LabelEncoder", 2, kLastOpset, "cpu", {{"T1", 0, v2}, {"T2", -1, v2}});
  reg.kernel<LabelEncoder>(kDomain, "LabelEncoder", 4, SINGA_VERSION_OPEN, "cpu",
                           {{"T1", 0, kKeyTypes}, {"T2", -1, kKeyTypes}});
}

}  // namespace ml
}  // namespace ops
}  // namespace singa
