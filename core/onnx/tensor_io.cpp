// TensorProto <-> Tensor, and .npy files.
#include <singa/onnx.hpp>

#include <onnx/onnx_pb.h>

#include <boost/filesystem.hpp>

#include <cstring>
#include <fstream>
#include <sstream>

namespace fs = boost::filesystem;

namespace singa {
namespace onnx {

namespace {

std::string tensor_label(const ::onnx::TensorProto& p) {
  return "tensor '" + p.name() + "'";
}

// Reads external data, refusing locations that escape base_dir (absolute
// paths, '..', symlinks pointing outside).
std::string read_external(const ::onnx::TensorProto& p, const std::string& base_dir, size_t expected) {
  std::string location;
  int64_t offset = 0, length = -1;
  // The whole value must be a number: "12abc" is not 12.
  auto number = [&](const ::onnx::StringStringEntryProto& kv) -> int64_t {
    size_t used = 0;
    int64_t v = -1;
    try {
      v = std::stoll(kv.value(), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != kv.value().size() || v < 0)
      throw Error(SINGA_INVALID_ARGUMENT, tensor_label(p) + ": bad external_data entry '" + kv.key() + "' = '" + kv.value() + "'");
    return v;
  };
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = number(kv);
    else if (kv.key() == "length") length = number(kv);
  }
  if (location.empty()) throw Error(SINGA_INVALID_ARGUMENT, tensor_label(p) + ": external data without a location");
  if (base_dir.empty())
    throw Error(SINGA_INVALID_ARGUMENT, tensor_label(p) + ": external data '" + location + "' but the model has no folder");
  fs::path loc(location);
  if (loc.is_absolute() || loc.has_root_name() || loc.has_root_directory())
    throw Error(SINGA_INVALID_ARGUMENT, tensor_label(p) + ": external data path '" + location + "' is absolute; it must be inside the model's folder");
  for (const auto& part : loc)
    if (part == "..") throw Error(SINGA_INVALID_ARGUMENT, tensor_label(p) + ": external data path '" + location + "' escapes the model's folder");
  boost::system::error_code ec;
  fs::path base = fs::canonical(base_dir, ec);
  if (ec) throw Error(SINGA_NOT_FOUND, tensor_label(p) + ": model folder '" + base_dir + "' not found");
  fs::path full = fs::canonical(base / loc, ec);
  if (ec) throw Error(SINGA_NOT_FOUND, tensor_label(p) + ": external data file '" + location + "' not found in " + base.string());
  std::string b = base.string() + "/", f = full.string();
  if (f.compare(0, b.size(), b) != 0)
    throw Error(SINGA_INVALID_ARGUMENT, tensor_label(p) + ": external data path '" + location + "' resolves outside the model's folder");
  if (offset < 0) throw Error(SINGA_INVALID_ARGUMENT, tensor_label(p) + ": negative external data offset");
  uintmax_t fsize = fs::file_size(full, ec);
  if (ec) throw Error(SINGA_NOT_FOUND, tensor_label(p) + ": cannot stat '" + location + "'");
  size_t len = length < 0 ? expected : size_t(length);
  if (len != expected)
    throw Error(SINGA_INVALID_ARGUMENT, tensor_label(p) + ": external data length " + std::to_string(len) + " != " + std::to_string(expected) + " bytes the shape needs");
  if (uintmax_t(offset) + len > fsize)
    throw Error(SINGA_INVALID_ARGUMENT, tensor_label(p) + ": external data '" + location + "' is shorter than offset+length");
  std::ifstream in(full.string(), std::ios::binary);
  in.seekg(offset);
  std::string data(len, '\0');
  in.read(&data[0], std::streamsize(len));
  if (!in) throw Error(SINGA_INVALID_ARGUMENT, tensor_label(p) + ": cannot read external data '" + location + "'");
  return data;
}

template <typename Src, typename Dst>
void copy_field(const google::protobuf::RepeatedField<Src>& f, Dst* out, int64_t n, const ::onnx::TensorProto& p, const char* field) {
  if (f.size() != n)
    throw Error(SINGA_INVALID_ARGUMENT, tensor_label(p) + ": " + field + " holds " + std::to_string(f.size()) +
                                            " values but the shape needs " + std::to_string(n));
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Dst>(f.Get(int(i)));
}

}  // namespace

Tensor from_proto(const ::onnx::TensorProto& p, const std::string& base_dir) {
  int32_t t = p.data_type();
  if (t <= 0 || t > SINGA_ONNX_INT2 || dtype_bits(t) == 0)
    throw Error(SINGA_INVALID_ARGUMENT, tensor_label(p) + ": unsupported data_type " + std::to_string(t));
  if (p.has_segment()) throw Error(SINGA_UNIMPLEMENTED, tensor_label(p) + ": segmented tensors are not supported");
  Shape shape(p.dims().begin(), p.dims().end());
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(SINGA_INVALID_ARGUMENT, tensor_label(p) + ": negative dimension in " + shape_to_string(shape));
    if (d != 0 && n > (int64_t(1) << 40) / d)
      throw Error(SINGA_INVALID_ARGUMENT, tensor_label(p) + ": shape " + shape_to_string(shape) + " is absurdly large");
    n *= d;
  }
  if (t == SINGA_ONNX_STRING) {
    if (p.string_data_size() != n)
      throw Error(SINGA_INVALID_ARGUMENT, tensor_label(p) + ": string_data holds " + std::to_string(p.string_data_size()) + " values, shape needs " + std::to_string(n));
    return Tensor::from_strings(shape, std::vector<std::string>(p.string_data().begin(), p.string_data().end()));
  }
  // Packed types (4-bit, 2-bit) take ceil(n * bits / 8) bytes, in raw_data
  // and in int32_data alike (one byte per int32 there).
  size_t bytes = dtype_nbytes(t, n);
  const bool packed = dtype_bits(t) < 8;
  bool external = p.data_location() == ::onnx::TensorProto::EXTERNAL;
  std::string ext;
  if (external) ext = read_external(p, base_dir, bytes);
  const std::string* raw = external ? &ext : (p.has_raw_data() ? &p.raw_data() : nullptr);
  // The data must be in the file: check its size before allocating, so a
  // hostile shape costs nothing.
  if (raw && raw->size() != bytes)
    throw Error(SINGA_INVALID_ARGUMENT, tensor_label(p) + ": raw_data holds " + std::to_string(raw->size()) + " bytes but shape " +
                                            shape_to_string(shape) + " of " + dtype_name(t) + " needs " + std::to_string(bytes));
  if (!raw) {
    int64_t have = 0;
    switch (t) {
      case SINGA_ONNX_FLOAT: case SINGA_ONNX_COMPLEX64: have = p.float_data_size(); break;
      case SINGA_ONNX_DOUBLE: case SINGA_ONNX_COMPLEX128: have = p.double_data_size(); break;
      case SINGA_ONNX_INT64: have = p.int64_data_size(); break;
      case SINGA_ONNX_UINT32: case SINGA_ONNX_UINT64: have = p.uint64_data_size(); break;
      default: have = p.int32_data_size(); break;
    }
    int64_t want = (t == SINGA_ONNX_COMPLEX64 || t == SINGA_ONNX_COMPLEX128) ? n * 2 : packed ? int64_t(bytes) : n;
    if (have != want)
      throw Error(SINGA_INVALID_ARGUMENT, tensor_label(p) + ": holds " + std::to_string(have) + " values but shape " +
                                              shape_to_string(shape) + " needs " + std::to_string(want));
  }
  Tensor out(shape, t);
  if (raw) {
    if (bytes) std::memcpy(out.raw_data(), raw->data(), bytes);
    return out;
  }
  switch (t) {
    case SINGA_ONNX_FLOAT: copy_field(p.float_data(), out.data<float>(), n, p, "float_data"); break;
    case SINGA_ONNX_DOUBLE: copy_field(p.double_data(), out.data<double>(), n, p, "double_data"); break;
    case SINGA_ONNX_INT64: copy_field(p.int64_data(), out.data<int64_t>(), n, p, "int64_data"); break;
    case SINGA_ONNX_UINT32: copy_field(p.uint64_data(), out.data<uint32_t>(), n, p, "uint64_data"); break;
    case SINGA_ONNX_UINT64: copy_field(p.uint64_data(), out.data<uint64_t>(), n, p, "uint64_data"); break;
    case SINGA_ONNX_INT32: copy_field(p.int32_data(), out.data<int32_t>(), n, p, "int32_data"); break;
    case SINGA_ONNX_INT16: copy_field(p.int32_data(), out.data<int16_t>(), n, p, "int32_data"); break;
    case SINGA_ONNX_INT8: copy_field(p.int32_data(), out.data<int8_t>(), n, p, "int32_data"); break;
    case SINGA_ONNX_UINT16:
    case SINGA_ONNX_FLOAT16:
    case SINGA_ONNX_BFLOAT16: copy_field(p.int32_data(), out.data<uint16_t>(), n, p, "int32_data"); break;
    case SINGA_ONNX_UINT8: copy_field(p.int32_data(), out.data<uint8_t>(), n, p, "int32_data"); break;
    case SINGA_ONNX_BOOL: copy_field(p.int32_data(), out.data<uint8_t>(), n, p, "int32_data"); break;
    // float8 codes one per int32; packed types one byte (2 or 4 elements) per int32.
    case SINGA_ONNX_FLOAT8E4M3FN: case SINGA_ONNX_FLOAT8E4M3FNUZ: case SINGA_ONNX_FLOAT8E5M2:
    case SINGA_ONNX_FLOAT8E5M2FNUZ: case SINGA_ONNX_FLOAT8E8M0:
      copy_field(p.int32_data(), out.data<uint8_t>(), n, p, "int32_data");
      break;
    case SINGA_ONNX_UINT4: case SINGA_ONNX_INT4: case SINGA_ONNX_FLOAT4E2M1: case SINGA_ONNX_UINT2: case SINGA_ONNX_INT2:
      copy_field(p.int32_data(), out.data<uint8_t>(), int64_t(bytes), p, "int32_data");
      break;
    case SINGA_ONNX_COMPLEX64: copy_field(p.float_data(), out.data<float>(), n * 2, p, "float_data"); break;
    case SINGA_ONNX_COMPLEX128: copy_field(p.double_data(), out.data<double>(), n * 2, p, "double_data"); break;
    default: throw Error(SINGA_INVALID_ARGUMENT, tensor_label(p) + ": unsupported data_type");
  }
  return out;
}

::onnx::TensorProto to_proto(const Tensor& tensor, const std::string& name) {
  Tensor h = tensor.to_host();
  ::onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(h.dtype());
  for (int64_t d : h.shape()) p.add_dims(d);
  if (h.dtype() == SINGA_ONNX_STRING) {
    // ONNX strings are bytes: the tensor's own text keeps what follows a NUL,
    // which the C pointers (what kernels write) cannot.
    auto** s = h.data<const char*>();
    const auto& text = h.strings();
    const size_t first = size_t(h.dl().byte_offset) / sizeof(const char*);
    for (int64_t i = 0; i < h.numel(); ++i) {
      size_t k = first + size_t(i);
      if (k < text.size() && s[i] == text[k].c_str()) p.add_string_data(text[k]);
      else p.add_string_data(s[i] ? s[i] : "");
    }
  } else {
    p.set_raw_data(std::string(static_cast<const char*>(h.raw_data()), h.nbytes()));
  }
  return p;
}

// ------------------------------------------------------------------ .npy

namespace {

struct NpyType {
  const char* descr;
  int32_t dtype;
};
const NpyType kNpyTypes[] = {{"f4", SINGA_ONNX_FLOAT},  {"f8", SINGA_ONNX_DOUBLE}, {"f2", SINGA_ONNX_FLOAT16},
                             {"i1", SINGA_ONNX_INT8},   {"i2", SINGA_ONNX_INT16},  {"i4", SINGA_ONNX_INT32},
                             {"i8", SINGA_ONNX_INT64},  {"u1", SINGA_ONNX_UINT8},  {"u2", SINGA_ONNX_UINT16},
                             {"u4", SINGA_ONNX_UINT32}, {"u8", SINGA_ONNX_UINT64}, {"b1", SINGA_ONNX_BOOL}};

std::string dict_value(const std::string& header, const std::string& key, const std::string& path) {
  auto k = header.find("'" + key + "'");
  if (k == std::string::npos) throw Error(SINGA_INVALID_ARGUMENT, path + ": .npy header has no '" + key + "'");
  auto colon = header.find(':', k);
  if (colon == std::string::npos) throw Error(SINGA_INVALID_ARGUMENT, path + ": bad .npy header");
  size_t b = header.find_first_not_of(' ', colon + 1);
  if (b == std::string::npos) throw Error(SINGA_INVALID_ARGUMENT, path + ": bad .npy header");
  size_t e;
  if (header[b] == '(') e = header.find(')', b) + 1;
  else if (header[b] == '\'') e = header.find('\'', b + 1) + 1;
  else e = header.find_first_of(",}", b);
  if (e == std::string::npos || e == 0) throw Error(SINGA_INVALID_ARGUMENT, path + ": bad .npy header");
  return header.substr(b, e - b);
}

Tensor load_npy(const std::string& path, const std::string& bytes) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw Error(SINGA_INVALID_ARGUMENT, path + ": not a .npy file");
  int major = uint8_t(bytes[6]);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
    hstart = 10;
  } else {
    if (bytes.size() < 12) throw Error(SINGA_INVALID_ARGUMENT, path + ": truncated .npy header");
    hlen = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8) | (size_t(uint8_t(bytes[10])) << 16) | (size_t(uint8_t(bytes[11])) << 24);
    hstart = 12;
  }
  if (hstart + hlen > bytes.size()) throw Error(SINGA_INVALID_ARGUMENT, path + ": truncated .npy header");
  std::string header = bytes.substr(hstart, hlen);
  std::string descr = dict_value(header, "descr", path);
  if (dict_value(header, "fortran_order", path) != "False")
    throw Error(SINGA_UNIMPLEMENTED, path + ": Fortran-ordered .npy arrays are not supported");
  if (descr.size() < 4 || descr[1] == '>') throw Error(SINGA_UNIMPLEMENTED, path + ": big-endian or unknown dtype " + descr);
  std::string code = descr.substr(2, descr.size() - 3);
  int32_t t = 0;
  for (auto& nt : kNpyTypes)
    if (code == nt.descr) t = nt.dtype;
  if (!t) throw Error(SINGA_UNIMPLEMENTED, path + ": unsupported .npy dtype " + descr);
  std::string sh = dict_value(header, "shape", path);
  Shape shape;
  std::stringstream ss(sh.substr(1, sh.size() - 2));
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.find_first_not_of(' ') == std::string::npos) continue;
    try {
      shape.push_back(std::stoll(item));
    } catch (const std::exception&) {
      throw Error(SINGA_INVALID_ARGUMENT, path + ": bad shape " + sh);
    }
  }
  // The data must be in the file: check its size before allocating, so a
  // hostile header costs nothing.
  size_t need = dtype_size(t);
  for (int64_t d : shape) {
    if (d < 0) throw Error(SINGA_INVALID_ARGUMENT, path + ": negative dimension in .npy shape " + sh);
    if (d != 0 && need > (size_t(1) << 50) / size_t(d))
      throw Error(SINGA_INVALID_ARGUMENT, path + ": .npy shape " + sh + " is absurdly large");
    need *= size_t(d);
  }
  size_t data_start = hstart + hlen;
  if (bytes.size() - data_start != need)
    throw Error(SINGA_INVALID_ARGUMENT, path + ": holds " + std::to_string(bytes.size() - data_start) + " data bytes, shape " +
                                            shape_to_string(shape) + " needs " + std::to_string(need));
  Tensor out(shape, t);
  if (out.nbytes()) std::memcpy(out.raw_data(), bytes.data() + data_start, out.nbytes());
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(SINGA_NOT_FOUND, path + ": cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Tensor load_tensor_file(const std::string& path) {
  std::string bytes = read_file(path);
  if (fs::path(path).extension() == ".npy") return load_npy(path, bytes);
  ::onnx::TensorProto p;
  if (!p.ParseFromString(bytes)) throw Error(SINGA_INVALID_ARGUMENT, path + ": not a valid TensorProto (.pb) file");
  try {
    return from_proto(p, fs::path(path).parent_path().string());
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + e.what());
  }
}

void save_tensor_pb(const Tensor& tensor, const std::string& path, const std::string& name) {
  std::ofstream out(path, std::ios::binary);
  if (!out || !to_proto(tensor, name).SerializeToOstream(&out)) throw Error(SINGA_NOT_FOUND, path + ": cannot write");
}

void save_tensor_npy(const Tensor& tensor, const std::string& path) {
  Tensor h = tensor.to_host();
  const char* code = nullptr;
  for (auto& nt : kNpyTypes)
    if (nt.dtype == h.dtype()) code = nt.descr;
  if (!code) throw Error(SINGA_UNIMPLEMENTED, std::string("cannot write ") + dtype_name(h.dtype()) + " to .npy");
  std::string shape = "(";
  for (int64_t d : h.shape()) shape += std::to_string(d) + ",";
  if (h.ndim() > 1) shape.pop_back();
  shape += ")";
  std::string endian = (std::string(code) == "b1" || code[1] == '1') ? "|" : "<";
  std::string header = "{'descr': '" + endian + code + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  char len[2] = {char(header.size() & 0xff), char(header.size() >> 8)};
  out.write(len, 2);
  out << header;
  out.write(static_cast<const char*>(h.raw_data()), std::streamsize(h.nbytes()));
  if (!out) throw Error(SINGA_NOT_FOUND, path + ": cannot write");
}

}  // namespace onnx
}  // namespace singa
